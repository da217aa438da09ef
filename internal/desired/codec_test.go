package desired

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEncodeDeterministic(t *testing.T) {
	t.Parallel()
	varsForward := map[string]string{}
	varsBackward := map[string]string{}
	keys := []string{"cluster_name", "cluster_label_region", "replicas", "a", "z", "m"}
	for i, k := range keys {
		varsForward[k] = k + "-value"
		varsBackward[keys[len(keys)-1-i]] = keys[len(keys)-1-i] + "-value"
	}
	a := Assignment{Release: "apps", Source: "apps", Digest: "sha256:bbbb", Vars: varsForward}
	b := Assignment{Release: "baseline", Source: "platform", Digest: "sha256:aaaa", Timeout: time.Minute}
	a2 := a
	a2.Vars = varsBackward
	b2 := b
	b2.Vars = map[string]string{} // nil and empty Vars are the same desired state

	first, err := Encode(Document{Assignments: []Assignment{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		second, err := Encode(Document{Assignments: []Assignment{b2, a2}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(first), string(second)); diff != "" {
			t.Fatalf("Encode is not canonical (-first +second):\n%s", diff)
		}
	}
}

func TestEncodeFormat(t *testing.T) {
	t.Parallel()
	got, err := Encode(Document{Assignments: []Assignment{{
		Release: "baseline", Source: "platform", URL: "https://hub/a?x=1&y=<2>", Revision: "main@sha1:1111",
		Digest: "sha256:aaaa", Path: "clusters/eu", Namespace: "platform-system", SelfHeal: true,
		Timeout: 5 * time.Minute, Interval: 10 * time.Minute, Vars: map[string]string{"z": "1", "cluster_name": "eu-1"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"assignments":[{"release":"baseline","source":"platform","url":"https://hub/a?x=1&y=<2>","revision":"main@sha1:1111",` +
		`"digest":"sha256:aaaa","path":"clusters/eu","namespace":"platform-system","prune":false,"selfHeal":true,` +
		`"wait":false,"timeout":300000000000,"interval":600000000000,"vars":{"cluster_name":"eu-1","z":"1"}}]}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Encode mismatch (-want +got):\n%s", diff)
	}

	for _, empty := range [][]Assignment{nil, {}} {
		got, err := Encode(Document{Assignments: empty})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != `{"assignments":[]}` {
			t.Errorf("Encode(%#v) = %s, want {\"assignments\":[]}", empty, got)
		}
	}
}

func TestDecodeMinimal(t *testing.T) {
	t.Parallel()
	got, err := Decode([]byte(`[{"release":"a"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Assignment{{Release: "a", Vars: map[string]string{}}}, got); diff != "" {
		t.Errorf("Decode of a minimal assignment mismatch (-want +got):\n%s", diff)
	}
}

func TestEncodeDecodeErrors(t *testing.T) {
	t.Parallel()
	dup := []Assignment{{Release: "a"}, {Release: "b"}, {Release: "a"}}
	if _, err := Encode(Document{Assignments: dup}); err == nil || err.Error() != `release "a": assigned more than once` {
		t.Errorf("Encode of a duplicate: got %v", err)
	}
	if _, err := Encode(Document{Assignments: []Assignment{{Source: "platform"}}}); err == nil || err.Error() != `assignment of source "platform": release name is empty` {
		t.Errorf("Encode of an unnamed assignment: got %v", err)
	}
	tests := []struct {
		in, want string
	}{
		{`[{"release":"a"},{"release":"a"}]`, `release "a": assigned more than once`},
		{`[{"release":""}]`, `assignment of source "": release name is empty`},
		{`{"release":"a"}`, `desired state: no "assignments" field`},
		{`[`, "desired state: unexpected end of JSON input"},
		{`{"assignments":[{"release":"a"}],"removed":[{"release":"a"}]}`, `release "a": both assigned and tombstoned`},
		{`{"assignments":[],"removed":[{"release":"a"},{"release":"a"}]}`, `release "a": tombstoned more than once`},
		{`{"assignments":[],"removed":[{"reason":"not-selected"}]}`, `tombstone 0: release name is empty`},
		{`{"assignments":[{"release":"a"}]}`, ``},
		{`[{"release":"a"}]`, ``}, // what hubs before tombstones stored
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.in))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Decode(%s): got error %q, want %q", tt.in, got, tt.want)
		}
	}
}
