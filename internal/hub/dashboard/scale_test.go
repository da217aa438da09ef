package dashboard_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/browsertest"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestMatrixAtScale opens the dashboard on a hub with 1,000 clusters x 20 releases of stored
// status (hubtest's mix of Ready, Progressing, Failed, drifted, conflicted and unreachable)
// and checks that the matrix draws one page of rows, not 20,000 cells, that paging and the
// filters select what the status API says they should, and that the overview's counts are
// the API's.
//
// Serial: beside the other browser tests, on a loaded machine, its hub's answer to the skew
// of 20,000 statuses outlasted the client's timeout.
func TestMatrixAtScale(t *testing.T) {
	f := hubtest.Start(t, hubtest.Options{})
	client, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
	if err != nil {
		t.Fatal(err)
	}
	st, err := client.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := client.Clusters(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]map[string]string{}
	for _, c := range clusters {
		labels[c.Name] = c.Labels
	}
	// want counts the clusters the status API says match: a label, and a release whose
	// assignment is in phase (any release and any phase when empty).
	want := func(label, release string, phase hubclient.Phase) int {
		k, v, _ := strings.Cut(label, "=")
		match := map[string]bool{}
		for _, a := range st.Assignments {
			if (label == "" || labels[a.Cluster][k] == v) && (release == "" || a.Release == release) && (phase == "" || a.Phase == phase) {
				match[a.Cluster] = true
			}
		}
		return len(match)
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
	waitText := func(sel, want string) { // the hub computes 20,000 assignments, slowly under -race
		t.Helper()
		browsertest.WaitText(t, tab, time.Minute, sel, want)
	}

	run(chromedp.Navigate(f.APIURL + "/#token=" + f.AdminToken + "&view=matrix"))
	waitText("#matrix-summary", "clusters 1–50 of 1000 shown")
	if n := eval(`String(document.querySelectorAll('#matrix td[data-release]').length)`); n != "1000" {
		t.Errorf("%s matrix cells in the DOM, want one page: 50 clusters x 20 releases", n)
	}
	browsertest.Screenshot(t, tab, "dashboard-1000-clusters", false)

	run(chromedp.Click(chromedp.CSS(`#page-next`)))
	waitText("#matrix-summary", "clusters 51–100 of 1000 shown (1000 in the fleet), page 2 of 20")
	if first := eval(`document.querySelector('#matrix tbody tr').dataset.cluster`); first != f.Clusters[50] {
		t.Errorf("page 2 starts with %s, want %s", first, f.Clusters[50])
	}

	for _, tc := range []struct {
		hash, label, release string
		phase                hubclient.Phase
	}{
		{"#/matrix?state=failed", "", "", hubclient.PhaseFailed},
		{"#/matrix?state=unreachable", "", "", hubclient.PhaseUnreachable},
		{"#/matrix?q=region%3Dap&release=release-03&state=progressing", "region=ap", "release-03", hubclient.PhaseProgressing},
		{"#/matrix?q=env%3Dstaging", "env=staging", "", ""},
	} {
		run(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, tc.hash)))
		n := want(tc.label, tc.release, tc.phase)
		if n == 0 {
			t.Fatalf("%s: the seeded fleet has no such cluster; the test would prove nothing", tc.hash)
		}
		waitText("#matrix-summary", fmt.Sprintf("of %d shown", n))
	}

	run(chromedp.Click(chromedp.CSS(`#nav a[data-view="overview"]`)))
	waitText(`#view-overview tr[data-release="release-00"]`, "release-00")
	got := eval(`Array.from(document.querySelectorAll('#view-overview tr[data-release="release-00"] td.num')).map((td) => td.textContent).join(' ')`)
	s := st.Releases[slices.IndexFunc(st.Releases, func(r hubclient.ReleaseSummary) bool { return r.Release == "release-00" })]
	if w := fmt.Sprintf("%d %d %d %d %d %d %d %d", s.Clusters, s.Ready, s.Progressing, s.Pending, s.Failed, s.Unreachable, s.Drifted, s.Conflicted); got != w {
		t.Errorf("overview counts of release-00: %q, want the status API's %q", got, w)
	}
	browsertest.Screenshot(t, tab, "dashboard-1000-overview", true)

	skew, err := client.Skew(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	wantSkew := map[string]int{}
	for _, r := range skew.Releases {
		if r.Skewed > 0 {
			wantSkew[r.Release] += r.Skewed
		}
	}
	run(chromedp.Click(chromedp.CSS(`#nav a[data-view="skew"]`)))
	waitText(`#skew-summary`, "have clusters off the desired revision")
	gotSkew := map[string]int{}
	if err := json.Unmarshal([]byte(eval(`JSON.stringify(Object.fromEntries(Array.from(document.querySelectorAll('#view-skew .skew')).map((d) => [d.dataset.release, Number(d.dataset.skewed)])))`)), &gotSkew); err != nil {
		t.Fatal(err)
	}
	if len(wantSkew) == 0 {
		t.Fatal("the seeded fleet has no skew; the test would prove nothing")
	}
	if diff := cmp.Diff(wantSkew, gotSkew); diff != "" {
		t.Errorf("clusters off the desired revision per release, page vs GET /api/v1/skew (-want +got):\n%s", diff)
	}
	browsertest.Screenshot(t, tab, "dashboard-1000-skew", false)

	drift, err := client.Drift(t.Context(), hubclient.DriftFilter{})
	if err != nil {
		t.Fatal(err)
	}
	run(chromedp.Click(chromedp.CSS(`#nav a[data-view="drift"]`)))
	waitText(`#drift-summary`, fmt.Sprintf("%d drifted object(s)", len(drift.Objects)))
	browsertest.Screenshot(t, tab, "dashboard-1000-drift", false)

	// The clusters list pages 1,000 clusters and filters them as the matrix does.
	run(chromedp.Click(chromedp.CSS(`#nav a[data-view="clusters"]`)))
	waitText("#clusters-summary", "1000 of 1000 cluster(s) shown, page 1 of 10")
	if n := eval(`String(document.querySelectorAll('#clusters tbody tr').length)`); n != "100" {
		t.Errorf("%s cluster rows in the DOM, want one page of 100", n)
	}
	run(chromedp.Evaluate[chromedp.Void](`location.hash = '#/clusters?q=env%3Dstaging'`))
	waitText("#clusters-summary", fmt.Sprintf("%d of 1000 cluster(s) shown", want("env=staging", "", "")))

	// One release on one cluster, from the seeded reports (hubtest.Seed): a failed, a
	// conflicted and a drifted assignment. Their reports carry no object detail, as an agent
	// before it sent: the view still shows the error, the conflict and the drifted paths.
	for _, tc := range []struct {
		cluster, release, sel, want string
	}{
		{f.Clusters[7], "release-00", "#assignment-error", "admission webhook denied the request"},
		{f.Clusters[11], "release-00", "#assignment-conflicts", `.data.level owned by field manager "kubectl-edit"`},
		{f.Clusters[5], "release-01", `#view-assignment tr[data-object="configmap/settings-release-01"]`, ".data.level"},
	} {
		run(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/assignment/%s/%s'`, tc.cluster, tc.release)))
		waitText("#assignment-cluster", tc.cluster)
		waitText(tc.sel, tc.want)
	}
	browsertest.Screenshot(t, tab, "dashboard-1000-assignment", false)
}
