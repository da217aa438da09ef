package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/hubtest"
)

func TestDetailString(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	tests := []struct {
		name   string
		detail map[string]any
		want   string
	}{
		{"none", nil, ""},
		{"scalars, keys sorted", map[string]any{"revision": "main@sha1:0123456789abcdef0123456789abcdef01234567", "digest": "sha256:" + strings.Repeat("ab", 32), "objects": float64(3), "drifted": true},
			"digest=sha256:" + strings.Repeat("ab", 32) + " drifted=true objects=3 revision=main@sha1:0123456789abcdef0123456789abcdef01234567"},
		{"a nested object flattens under dotted keys", map[string]any{"count": float64(6), "verified": map[string]any{"count": float64(2), "from": "2026-12-01T09:10:00Z"}},
			"count=6 verified.count=2 verified.from=2026-12-01T09:10:00Z"},
		{"lists are JSON", map[string]any{"conflicts": []any{".data.a owned by \"team-x\"", "b"}, "objects": []any{map[string]any{"object": "ConfigMap/web", "paths": []any{".data.a"}}}},
			`conflicts=[".data.a owned by \"team-x\"","b"] objects=[{"object":"ConfigMap/web","paths":[".data.a"]}]`},
		{"strings with spaces, quotes or equals signs are quoted, empty ones too", map[string]any{"error": `ConfigMap/web apply failed: "x"`, "kv": "a=b", "empty": ""},
			`empty="" error="ConfigMap/web apply failed: \"x\"" kv="a=b"`},
		{"nothing is cut", map[string]any{"error": long}, "error=" + long},
		{"large and fractional numbers keep their digits", map[string]any{"reportSeq": float64(1 << 40), "seconds": 1.25}, "reportSeq=1099511627776 seconds=1.25"},
		{"an empty object and null", map[string]any{"removal": map[string]any{}, "x": nil}, "removal={} x=null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := detailString(tt.detail)
			if got != tt.want {
				t.Errorf("detailString:\n got %s\nwant %s", got, tt.want)
			}
			if strings.Contains(got, "map[") {
				t.Errorf("Go map syntax in %s", got)
			}
		})
	}
}

// TestAuditOutput reads a real hub's audit trail as a user does: the table shows fields,
// never Go syntax, and -o json carries each detail as an object.
func TestAuditOutput(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 2, Releases: 1})
	conn := []string{"--hub", f.APIURL, "--token", f.AdminToken, "--ca", f.CAPath}
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Run(t.Context(), append(args, conn...), &out, &errOut); code != 0 {
			t.Fatalf("flotilla %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		return out.String()
	}
	table := run("audit")
	if strings.Contains(table, "map[") || !strings.Contains(table, "source.revision") {
		t.Errorf("flotilla audit:\n%s", table)
	}
	var recs []struct {
		Action string          `json:"action"`
		Detail json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal([]byte(run("audit", "-o", "json")), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("audit -o json: no records")
	}
	for _, r := range recs {
		if len(r.Detail) > 0 && r.Detail[0] != '{' {
			t.Errorf("audit -o json: %s detail is %s, want an object", r.Action, r.Detail)
		}
	}
}
