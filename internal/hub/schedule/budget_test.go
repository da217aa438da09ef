package schedule

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// TestScheduleRenderBudget: each assignment carries the budget its release runs under (the
// hub's, lowered by the project, as the release asks), a
// release asking more than its project's maximum is not scheduled, with a problem naming the
// field, the value and the maximum.
func TestScheduleRenderBudget(t *testing.T) {
	t.Parallel()
	hub := v1alpha1.BudgetLimits{MemoryBytes: 256 << 20, CPUTime: 30 * time.Second, WallTime: 30 * time.Second, Objects: 10000, OutputBytes: 64 << 20}
	mem := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	team := teamA
	team.Spec.ClusterSelector = v1alpha1.LabelSelector{}
	team.Spec.RenderBudget = &v1alpha1.RenderBudget{Memory: mem("128Mi"), Objects: 1000}
	within := inProject(release("within"), "team-a", "", "team-a")
	within.Spec.RenderBudget = &v1alpha1.RenderBudget{Memory: mem("64Mi"), Timeout: v1alpha1.Duration{Duration: 5 * time.Second}}
	greedy := inProject(release("greedy"), "team-a", "", "team-a")
	greedy.Spec.RenderBudget = &v1alpha1.RenderBudget{Memory: mem("1Gi")}
	f := fleet(release("platform-web"), inProject(release("team-web"), "team-a", "", "team-a"), within, greedy)
	f.Projects = []v1alpha1.Project{team}

	plan := ScheduleWith(Options{RenderBudget: hub}, f, []Cluster{cluster("edge")}, map[string]Artifact{"platform": platformArtifact}, nil, "r1")
	got := map[string]v1alpha1.BudgetLimits{}
	for _, a := range plan.Assignments["edge"] {
		if a.RenderBudget == nil {
			t.Fatalf("assignment %s carries no render budget", a.Release)
		}
		got[a.Release] = *a.RenderBudget
	}
	want := map[string]v1alpha1.BudgetLimits{
		"platform-web": hub,
		"team-web":     {MemoryBytes: 128 << 20, CPUTime: 30 * time.Second, WallTime: 30 * time.Second, Objects: 1000, OutputBytes: 64 << 20},
		"within":       {MemoryBytes: 64 << 20, CPUTime: 30 * time.Second, WallTime: 5 * time.Second, Objects: 1000, OutputBytes: 64 << 20},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("budgets by release (-want +got):\n%s", diff)
	}
	var problems []string
	for _, p := range plan.Problems {
		problems = append(problems, p.String())
	}
	const wantProblem = "Release/greedy: spec.renderBudget.memory: 1Gi is above project team-a's maximum of 128Mi; not assigned afresh"
	if !strings.Contains(strings.Join(problems, "\n"), wantProblem) {
		t.Errorf("problems %q, want one containing %q", problems, wantProblem)
	}

	// With the hub's budget what agents render under anyway, an assignment in that budget
	// carries none: every document of a fleet without budgets stays as it was.
	plan = ScheduleWith(Options{RenderBudget: hub, AgentDefaults: hub}, f, []Cluster{cluster("edge")}, map[string]Artifact{"platform": platformArtifact}, nil, "r1")
	carried := map[string]bool{}
	for _, a := range plan.Assignments["edge"] {
		carried[a.Release] = a.RenderBudget != nil
	}
	if want := map[string]bool{"platform-web": false, "team-web": true, "within": true}; !cmp.Equal(want, carried) {
		t.Errorf("assignments carrying a budget %v, want %v", carried, want)
	}
}
