package v1alpha1

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

func TestDurationRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		out  string // Go's String form
	}{
		{"1m", time.Minute, "1m0s"},
		{"90s", 90 * time.Second, "1m30s"},
		{"1h30m", 90 * time.Minute, "1h30m0s"},
		{"250ms", 250 * time.Millisecond, "250ms"},
		{"0s", 0, "0s"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			var d Duration
			if err := json.Unmarshal([]byte(`"`+tt.in+`"`), &d); err != nil {
				t.Fatal(err)
			}
			if d.Duration != tt.want {
				t.Errorf("unmarshal %q: got %v, want %v", tt.in, d.Duration, tt.want)
			}
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(b), `"`+tt.out+`"`; got != want {
				t.Errorf("marshal: got %s, want %s", got, want)
			}
			var again Duration
			if err := json.Unmarshal(b, &again); err != nil {
				t.Fatal(err)
			}
			if again != d {
				t.Errorf("round trip: got %v, want %v", again, d)
			}
		})
	}
}

func TestDurationRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`60`, `"60"`, `"1 minute"`, `true`} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("unmarshal %s: want an error, got %v", in, d)
		}
	}
}

func TestReleaseYAMLRoundTrip(t *testing.T) {
	t.Parallel()
	r := Release{
		APIVersion: APIVersion, Kind: KindRelease,
		Metadata: ObjectMeta{Name: "baseline"},
		Spec: ReleaseSpec{
			Source:   "platform",
			Targets:  []Target{{Selector: LabelSelector{MatchLabels: map[string]string{"env": "production"}}}},
			SelfHeal: new(false),
			Timeout:  Duration{90 * time.Second},
		},
	}
	b, err := yaml.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	// Unset durations are left out, not written as "0s".
	want := `apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata:
  name: baseline
spec:
  selfHeal: false
  source: platform
  targets:
  - selector:
      matchLabels:
        env: production
  timeout: 1m30s
`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("sigs.k8s.io/yaml Marshal mismatch (-want +got):\n%s", diff)
	}
	got, err := Parse(map[string][]byte{"r.yaml": b, "s.yaml": []byte(platformSource)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got.Releases[0]); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}

	// go.yaml.in/yaml/v3 uses the same text form.
	var spec struct {
		Timeout Duration `yaml:"timeout"`
	}
	if err := yamlv3.Unmarshal([]byte("timeout: 1h30m\n"), &spec); err != nil {
		t.Fatal(err)
	}
	b, err = yamlv3.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "timeout: 1h30m0s\n"; got != want {
		t.Errorf("yaml/v3 round trip: got %q, want %q", got, want)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	var zero ReleaseSpec
	set := ReleaseSpec{SelfHeal: new(false), Timeout: Duration{time.Minute}, Interval: Duration{time.Hour}}
	type defaults struct {
		SelfHeal          bool
		Timeout, Interval time.Duration
	}
	tests := []struct {
		name string
		spec ReleaseSpec
		want defaults
	}{
		{"unset", zero, defaults{true, 5 * time.Minute, 10 * time.Minute}},
		{"set", set, defaults{false, time.Minute, time.Hour}},
	}
	for _, tt := range tests {
		got := defaults{tt.spec.SelfHealOrDefault(), tt.spec.TimeoutOrDefault(), tt.spec.IntervalOrDefault()}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: release defaults mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
	if got := (SourceSpec{}).IntervalOrDefault(); got != time.Minute {
		t.Errorf("source interval default: got %v, want 1m", got)
	}
	if got := (SourceSpec{Interval: Duration{time.Hour}}).IntervalOrDefault(); got != time.Hour {
		t.Errorf("source interval set: got %v, want 1h", got)
	}
}
