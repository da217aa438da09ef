package v1alpha1

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// hubBudget is the hub's default budget of the cases below (the flags' defaults).
var hubBudget = BudgetLimits{MemoryBytes: 256 << 20, CPUTime: 30 * time.Second, WallTime: 30 * time.Second, Objects: 10000, OutputBytes: 64 << 20}

// TestRenderBudget: a Project lowers the hub's budget (never raises it); a Release asks
// within its project's maximum or is refused with the field, the value and the maximum.
func TestRenderBudget(t *testing.T) {
	t.Parallel()
	const project = `apiVersion: flotilla.dev/v1alpha1
kind: Project
metadata: {name: team-a}
spec:
  sources: [platform]
  namespaces: [team-a]
  serviceAccount: {namespace: team-a, name: deployer}
`
	tests := []struct {
		name         string
		project, rel string // renderBudget lines of each, "" for none
		want         BudgetLimits
		wantErr      string // from ResolveRenderBudget
		wantParseErr string // from Parse
	}{
		{name: "nothing set: the hub's", want: hubBudget},
		{name: "project lowers memory and objects", project: "{memory: 64Mi, objects: 500}",
			want: BudgetLimits{MemoryBytes: 64 << 20, CPUTime: 30 * time.Second, WallTime: 30 * time.Second, Objects: 500, OutputBytes: 64 << 20}},
		{name: "project asking more than the hub is held at the hub's", project: "{memory: 4Gi, timeout: 10m, output: 1Gi}", want: hubBudget},
		{name: "release within its project's maximum", project: "{memory: 128Mi, timeout: 20s}", rel: "{memory: 96Mi, timeout: 5s, objects: 100}",
			want: BudgetLimits{MemoryBytes: 96 << 20, CPUTime: 30 * time.Second, WallTime: 5 * time.Second, Objects: 100, OutputBytes: 64 << 20}},
		{name: "release at its project's maximum", project: "{memory: 128Mi}", rel: "{memory: 128Mi}",
			want: BudgetLimits{MemoryBytes: 128 << 20, CPUTime: 30 * time.Second, WallTime: 30 * time.Second, Objects: 10000, OutputBytes: 64 << 20}},
		{name: "release asks more memory than its project's maximum", project: "{memory: 128Mi}", rel: "{memory: 1Gi}",
			wantErr: "spec.renderBudget.memory: 1Gi is above project team-a's maximum of 128Mi"},
		{name: "release asks more memory than the hub's default", rel: "{memory: 512Mi}",
			wantErr: "spec.renderBudget.memory: 512Mi is above project team-a's maximum of 256Mi"},
		{name: "release asks more objects", project: "{objects: 500}", rel: "{objects: 501}",
			wantErr: "spec.renderBudget.objects: 501 is above project team-a's maximum of 500"},
		{name: "release asks more time", rel: "{timeout: 1m}",
			wantErr: "spec.renderBudget.timeout: 1m0s is above project team-a's maximum of 30s"},
		{name: "release asks more output", rel: "{output: 65Mi}",
			wantErr: "spec.renderBudget.output: 65Mi is above project team-a's maximum of 64Mi"},
		{name: "memory below the least", project: "{memory: 1Mi}",
			wantParseErr: "spec.renderBudget.memory: 1Mi is below the least a render can run in (16Mi)"},
		{name: "negative objects", rel: "{objects: -1}", wantParseErr: "spec.renderBudget.objects: -1 must be positive"},
		{name: "memory not a quantity", rel: "{memory: lots}", wantParseErr: `spec.renderBudget.memory: "lots" is not a quantity`},
		{name: "timeout not a duration", rel: "{timeout: 30}", wantParseErr: "spec.renderBudget.timeout: must be a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, r := project, release("web", validSpec+"  project: team-a\n  namespace: team-a\n")
			if tt.project != "" {
				p += "  renderBudget: " + tt.project + "\n"
			}
			if tt.rel != "" {
				r += "  renderBudget: " + tt.rel + "\n"
			}
			fleet, err := Parse(map[string][]byte{"p.yaml": []byte(p), "r.yaml": []byte(r), "s.yaml": []byte(platformSource)})
			if tt.wantParseErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantParseErr) {
					t.Fatalf("Parse: err = %v, want one containing %q", err, tt.wantParseErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := ResolveRenderBudget(hubBudget, "team-a", fleet.Projects[0].Spec.RenderBudget, fleet.Releases[0].Spec.RenderBudget)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ResolveRenderBudget: err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("budget (-want +got):\n%s", diff)
			}
		})
	}
}
