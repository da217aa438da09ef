package dashboard_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/phase"

	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/browsertest"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/oidctest"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// TestRolloutLanes opens the rollout of a release whose canary wave is done and whose last
// wave waits for approval, on a real hub: a lane per wave with its phase, approval badge,
// failures and clusters coloured by phase; the pinned revision; the events. It approves the
// wave with its button, is told why a rollback is refused, reads a cluster that a window
// holds back (phase Waiting) on the matrix and on the release-on-cluster view, checks that a
// viewer gets no buttons, and that a deployer of another project is shown the hub's 403.
func TestRolloutLanes(t *testing.T) {
	t.Parallel()
	// id2 views the platform project (web's) and deploys another: the page shows it the
	// buttons, and the hub refuses it.
	iss := oidctest.Start(t, "flotilla", map[string][]string{"id2": {"sre", "team-z-dev"}})
	f := hubtest.StartRollout(t, "waves:\n- {name: canary, selector: {matchLabels: {ring: canary}}, maxConcurrent: 1}\n- {name: rest, approval: required, maxFailures: 1}",
		map[string]map[string]string{"can-1": {"ring": "canary"}, "a": {"region": "eu"}, "b": {"region": "us"}},
		func(o *hub.Options) {
			o.OIDC = access.OIDCOptions{Issuer: iss.URL, ClientID: "flotilla", CAFile: iss.CAFile, GroupRoles: []string{"sre=viewer:platform", "team-z-dev=deployer:team-z"}}
		})
	desired := f.Desired(t, "can-1")
	f.ReportReady(t, "can-1", desired)
	f.WaitRollout(t, "waiting for approval", func(v phase.RolloutView) bool { return v.Phase == "WaitingApproval" })
	admin, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
	if err != nil {
		t.Fatal(err)
	}
	viewer, err := admin.CreateUserToken(t.Context(), hubclient.CreateUserTokenRequest{Name: "watcher", Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}

	spki, err := browsertest.ServerSPKI(t.Context(), f.APIURL, f.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	tab := browsertest.Start(t, browsertest.Options{TrustSPKI: []string{spki}})
	browsertest.WatchScriptErrors(t, tab)
	run := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tab, actions...); err != nil {
			t.Fatal(err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	waitText := func(sel, want string) {
		t.Helper()
		browsertest.WaitText(t, tab, time.Minute, sel, want)
	}
	attr := func(sel, name string) string {
		return eval(fmt.Sprintf(`(document.querySelector(%q) || {getAttribute: () => 'none'}).getAttribute(%q) || ''`, sel, name))
	}

	// From the release on the matrix to its rollout.
	run(chromedp.Navigate(f.APIURL + "/#token=" + f.AdminToken + "&view=matrix?release=web"))
	waitText("#matrix-rollout", "rollout of web")
	run(chromedp.Click(chromedp.CSS(`#matrix-rollout`)))
	waitText("#rollout-release", "web")
	waitText(`#rollout-lanes .lane[data-wave="rest"] [data-field="approval"]`, "approval required")

	canary := `#rollout-lanes .lane[data-wave="canary"]`
	rest := `#rollout-lanes .lane[data-wave="rest"]`
	for _, c := range []struct{ sel, attr, want string }{
		{canary, "data-phase", "Done"},
		{canary + ` a.rc[data-cluster="can-1"]`, "data-phase", "Done"},
		{canary + ` a.rc[data-cluster="can-1"]`, "class", "chip rc rp-done"},
		{canary + ` a.rc[data-cluster="can-1"]`, "href", "#/assignment/can-1/web"},
		{rest, "data-phase", "WaitingApproval"},
	} {
		if got := attr(c.sel, c.attr); got != c.want {
			t.Errorf("%s %s = %q, want %q", c.sel, c.attr, got, c.want)
		}
	}
	waitText(canary+` [data-field="failures"]`, "failures 0/0")
	waitText(rest+` [data-field="failures"]`, "failures 0/1")
	waitText(`#view-rollout dd[data-field="Revision (pinned)"]`, desired.Revision)
	waitText(`#view-rollout dd[data-field="Phase"]`, "WaitingApproval")
	waitText(`#rollout-events`, "wave-done: wave canary done")
	browsertest.Screenshot(t, tab, "dashboard-rollout-waiting-approval", true)

	// The lane's button approves the wave: the hub names who approved it.
	browsertest.Click(t, tab, rest+` button[data-action="approve"]`)
	waitText("#rollout-outcome", "approve rest: done")
	waitText(rest+` [data-field="approval"]`, "approved by token:admin")
	f.WaitRollout(t, "progressing on wave rest", func(v phase.RolloutView) bool { return v.Phase == "Progressing" })
	waitText(`#view-rollout dd[data-field="Phase"]`, "Progressing")
	waitText(`#rollout-events`, "approved: wave rest approved (by token:admin)")

	// A refused action shows the hub's reason: nothing completed, nothing to go back to.
	browsertest.Click(t, tab, `#rollout-actions button[data-action="rollback"]`, `#rollout-actions button[data-action="rollback"][data-confirm="yes"]`)
	waitText("#rollout-outcome", "rollback refused: ")
	waitText("#rollout-outcome", "nothing to roll back to")
	if cls := attr("#rollout-outcome", "class"); cls != "errtext" {
		t.Errorf("the refusal's class is %q, want errtext", cls)
	}

	// A cluster of the started wave reports that a window holds it back.
	a := f.Desired(t, "a")
	const window = `window "business-hours" opens 22:00 Europe/Berlin`
	report := &agentv1.AssignmentStatus{Release: "web", Generation: 1, Phase: "Waiting", Waiting: window, PendingRevision: a.Revision, PendingDigest: a.Digest}
	detail, err := protojson.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := f.Store.IngestReport(t.Context(), "a", 1, []store.AssignmentStatus{{Cluster: "a", Release: "web", ObservedGeneration: 1, Phase: "Waiting", Detail: detail, ReportedAt: now, UpdatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	run(chromedp.Evaluate[chromedp.Void](`location.hash = '#/matrix?release=web'`))
	eventually.Within(t, time.Minute, func() error {
		if class := attr(`#matrix td.cell[data-cluster="a"]`, "class"); !strings.Contains(class, "f-waiting") {
			return fmt.Errorf("cluster a's cell: class %q, want f-waiting", class)
		}
		return nil
	})
	run(chromedp.Evaluate[chromedp.Void](`location.hash = '#/assignment/a/web'`))
	waitText(`#view-assignment dd[data-field="Phase"]`, "Waiting")
	waitText("#assignment-waiting", window)
	waitText("#objects-summary", "is applied here yet: the release waits")
	browsertest.Screenshot(t, tab, "dashboard-assignment-waiting", false)

	// A viewer sees the lanes and no button.
	run(chromedp.Navigate(f.APIURL + "/#token=" + viewer.Token + "&view=rollout/web"))
	waitText("#rollout-readonly", "may view this rollout, not act on it")
	if n := eval(`String(document.querySelectorAll('#view-rollout button.act').length)`); n != "0" {
		t.Errorf("a viewer sees %s action buttons", n)
	}
	waitText(rest+` [data-field="approval"]`, "approved by token:admin")

	// The list of rollouts links to each.
	run(chromedp.Click(chromedp.CSS(`#nav a[data-view="rollouts"]`)))
	waitText(`#view-rollouts tr[data-release="web"]`, "Progressing")

	// A deployer of another project is shown the buttons (the page cannot know the release's
	// project) and the hub's refusal.
	run(chromedp.Click(chromedp.CSS(`#signout`)))
	waitText("#sso", "single sign-on")
	run(chromedp.Click(chromedp.CSS(`#sso-start`)))
	waitText("#sso-code", "enter the code")
	if err := iss.Approve(t.Context(), eval(`document.getElementById('sso-user-code').textContent`), "id2"); err != nil {
		t.Fatal(err)
	}
	waitText("#whoami", "oidc:id2")
	run(chromedp.Evaluate[chromedp.Void](`location.hash = '#/rollout/web'`))
	waitText(`#rollout-actions button[data-action="pause"]`, "Pause")
	browsertest.Click(t, tab, `#rollout-actions button[data-action="pause"]`)
	waitText("#rollout-outcome", "pause refused: oidc:id2 (")
	waitText("#rollout-outcome", "may not POST /api/v1/rollouts/web/pause: it needs deployer of the release's project")
	browsertest.Screenshot(t, tab, "dashboard-rollout-refused", false)
	if v := f.WaitRollout(t, "read", func(phase.RolloutView) bool { return true }); v.Paused {
		t.Errorf("the refused pause paused the rollout: %+v", v)
	}
}
