package agent

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/project"
)

// teamApp is app in project team-a.
func teamApp(release, revision, digest string) desired.Assignment {
	as := app(release, revision, digest)
	as.Project = &project.Rules{Name: "team-a", Namespaces: []string{release}}
	return as
}

// TestLanesKeepProjectsApart: a team release whose reconcile hangs (a render at its budget,
// an API call that never answers) holds only its own project's lane. The platform's next
// revision lands meanwhile; the team's other release waits behind it, in order.
func TestLanesKeepProjectsApart(t *testing.T) {
	t.Parallel()
	r := newLoopRig(t, noon)
	// The team's releases come first in the desired state: a serial loop reaches them first.
	bomb1, bomb2 := r.version("bomb", "v1"), r.version("bomb", "v2")
	next1, next2 := r.version("next", "v1"), r.version("next", "v2")
	web1, web2 := r.version("web", "v1"), r.version("web", "v2")
	r.a.setDesired(desiredAt(1, nil, teamApp("bomb", "main@1", bomb1), teamApp("next", "main@1", next1), app("web", "main@1", web1)))
	// The two lanes run side by side: only the order within a project is fixed.
	r.idleUntil("first revisions applied", func(seen []string) bool {
		return len(seen) == 3 && strings.Join(slices.DeleteFunc(slices.Clone(seen), func(c string) bool { return c == "web@v1 prune=true selfHeal=true" }), ",") == "bomb@v1 prune=true selfHeal=true,next@v1 prune=true selfHeal=true"
	})

	release := r.target.holdRelease("bomb")
	r.a.setDesired(desiredAt(2, nil, teamApp("bomb", "main@2", bomb2), teamApp("next", "main@2", next2), app("web", "main@2", web2)))
	eventually.Within(t, 20*time.Second, func() error {
		if r.a.passes.Load() != 1 || r.last("web").GetRevision() != "main@2" {
			return fmt.Errorf("with the team's release hanging, the platform's main@2 did not land: reconciles %q, web's last status %v (%d passes in flight, want 1)", r.target.seen(), r.last("web"), r.a.passes.Load())
		}
		return nil
	})
	r.expect("web", wantStatus{phase: "Ready", revision: "main@2"})
	if got := r.last("next").GetRevision(); got != "main@1" {
		t.Errorf("next reported %s while bomb, before it in its project's lane, still hangs; want main@1", got)
	}

	release()
	want := append(r.target.seen(), "bomb@v2 prune=true selfHeal=true", "next@v2 prune=true selfHeal=true")
	r.idle("the team's lane goes on once bomb returns", want...)
	r.expect("bomb", wantStatus{phase: "Ready", revision: "main@2"})
	r.expect("next", wantStatus{phase: "Ready", revision: "main@2"})

	// A request to sync every release reaches each release once, in both projects, and is
	// remembered once both lanes have answered it.
	d := desiredAt(2, nil, teamApp("bomb", "main@2", bomb2), teamApp("next", "main@2", next2), app("web", "main@2", web2))
	d.Syncs = []desired.SyncRequest{{ID: "all", Actor: "token:admin"}}
	before := len(r.target.seen())
	r.a.setDesired(d)
	r.idleUntil("every release synced", func(seen []string) bool { return len(seen) == before+3 })
	for _, rel := range []string{"bomb", "next", "web"} {
		r.expect(rel, wantStatus{phase: "Ready", revision: "main@2", syncID: "all"})
	}
	if !r.a.st.syncHandled("all") {
		t.Error("the request to sync every release is not remembered as handled once every lane answered it")
	}
	// The same request in the next generation: each release reconciles once for the new
	// generation, and none answers the request again.
	d = desiredAt(3, nil, teamApp("bomb", "main@2", bomb2), teamApp("next", "main@2", next2), app("web", "main@2", web2))
	d.Syncs = []desired.SyncRequest{{ID: "all", Actor: "token:admin"}}
	r.a.setDesired(d)
	r.idleUntil("the next generation reconciled", func(seen []string) bool { return len(seen) == before+6 })
	for _, rel := range []string{"bomb", "next", "web"} {
		if st := r.last(rel); st.GetGeneration() != 3 || st.GetSyncId() != "" {
			t.Errorf("%s: last status of generation %d answers sync %q; want generation 3 answering none", rel, st.GetGeneration(), st.GetSyncId())
		}
	}
}

// idleUntil waits until the loop is idle (see idleWhen) and done holds for what the target
// saw, for reconciles whose order across projects is not fixed.
func (r *loopRig) idleUntil(what string, done func(seen []string) bool) {
	r.t.Helper()
	eventually.Within(r.t, 20*time.Second, func() error {
		if seen := r.target.seen(); !done(seen) || r.clk.Waiters() != 1 || r.a.passes.Load() != 0 {
			return fmt.Errorf("%s: reconciles\n  %s\n(%d timers, %d passes in flight; want the awaited reconciles, 1 timer and none in flight)", what, strings.Join(seen, "\n  "), r.clk.Waiters(), r.a.passes.Load())
		}
		return nil
	})
}
