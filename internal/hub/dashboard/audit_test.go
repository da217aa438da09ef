package dashboard_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/browsertest"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
)

// TestAuditView opens the dashboard's audit view on a real hub whose trail holds a full
// apply record, a checkpoint and a removal, and checks that details show as fields, values
// as the record holds them (not JSON-escaped, not markup), and that checkpoint records stay
// hidden until "Show checkpoints" is ticked.
func TestAuditView(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 2, Releases: 1})
	// The hub's own log file (in its data dir, beside the CA): records appended here are
	// what the audit API serves.
	log, err := audit.Open(t.Context(), filepath.Join(filepath.Dir(f.CAPath), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	cluster, release := f.Clusters[0], f.Releases[0]
	t0 := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
	for _, e := range []audit.Event{
		{Action: audit.ActionApply, Detail: map[string]any{
			"revision": "main@sha1:aaa", "objects": 3, "configured": 1,
			"conflicts": []string{`.data.logEndpoint owned by field manager "team-x"`},
			"error":     `ConfigMap/web apply failed: <b>not markup</b>`,
		}},
		{Action: audit.ActionVerified, Detail: map[string]any{
			"revision": "main@sha1:aaa", "count": 6, "from": t0.Add(10 * time.Minute), "to": t0.Add(time.Hour),
		}},
		{Action: audit.ActionRemoved, Detail: map[string]any{
			"revision": "main@sha1:aaa", "pruned": 2, "verified": map[string]any{"count": 2},
			"removal": map[string]any{"reason": "ReleaseDeleted", "prunedObjects": []string{"configmap/web in web", "service/web in web"}},
		}},
	} {
		e.Actor, e.Cluster, e.Release = "agent:"+cluster, cluster, release
		if _, err := log.Append(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}

	spki, err := browsertest.ServerSPKI(t.Context(), f.APIURL, f.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	tab := browsertest.Start(t, browsertest.Options{TrustSPKI: []string{spki}})
	browsertest.WatchScriptErrors(t, tab)
	waitFor := func(what, expr string) { t.Helper(); browsertest.WaitTrue(t, tab, time.Minute, what, expr) }
	eval := func(js string) []string {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[[]string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	// actions are the actions of this cluster's rows, newest first.
	actions := fmt.Sprintf(`Array.from(document.querySelectorAll('#audit-body tbody tr')).filter((tr) => tr.children[4].textContent === %q).map((tr) => tr.dataset.action)`, cluster)
	// fields are the detail fields of the newest row of action a, as "key: value".
	fields := func(a string) []string {
		t.Helper()
		return eval(fmt.Sprintf(`Array.from(document.querySelector('#audit-body tr[data-action=%q] td.detail').querySelectorAll('.field')).map((el) => el.dataset.key + ': ' + el.querySelector('.value').textContent)`, a))
	}

	if err := chromedp.Do(tab, chromedp.Navigate(f.APIURL+"/#token="+f.AdminToken+"&view=overview"),
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/audit?cluster=`+cluster+`'`)); err != nil {
		t.Fatal(err)
	}
	waitFor("the audit rows", `document.querySelectorAll('#audit-body tr[data-action="release.removed"]').length === 1`)
	if diff := cmp.Diff([]string{audit.ActionRemoved, audit.ActionApply}, eval(actions)); diff != "" {
		t.Errorf("rows without checkpoints (-want +got):\n%s", diff)
	}
	wantApply := []string{
		"configured: 1",
		`conflicts: .data.logEndpoint owned by field manager "team-x"`,
		"error: ConfigMap/web apply failed: <b>not markup</b>",
		"objects: 3",
		"revision: main@sha1:aaa",
	}
	if diff := cmp.Diff(wantApply, fields(audit.ActionApply)); diff != "" {
		t.Errorf("apply fields (-want +got):\n%s", diff)
	}
	if n := eval(`Array.from(document.querySelectorAll('#audit-body td.detail b')).filter((b) => b.textContent === 'not markup').map(String)`); len(n) != 0 {
		t.Errorf("a detail value became markup: %d <b> elements", len(n))
	}
	wantRemoved := []string{
		"pruned: 2",
		"removal.prunedObjects: configmap/web in web, service/web in web",
		"removal.reason: ReleaseDeleted",
		"revision: main@sha1:aaa",
		"verified.count: 2",
	}
	if diff := cmp.Diff(wantRemoved, fields(audit.ActionRemoved)); diff != "" {
		t.Errorf("release.removed fields (-want +got):\n%s", diff)
	}
	browsertest.Screenshot(t, tab, "dashboard-audit-structured", false)

	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#audit-checkpoints`))); err != nil {
		t.Fatal(err)
	}
	waitFor("the checkpoint row", `document.querySelectorAll('#audit-body tr[data-action="apply.verified"]').length === 1`)
	if diff := cmp.Diff([]string{audit.ActionRemoved, audit.ActionVerified, audit.ActionApply}, eval(actions)); diff != "" {
		t.Errorf("rows with checkpoints (-want +got):\n%s", diff)
	}
	wantVerified := []string{
		"count: 6",
		"from: " + t0.Add(10*time.Minute).Format(time.RFC3339),
		"revision: main@sha1:aaa",
		"to: " + t0.Add(time.Hour).Format(time.RFC3339),
	}
	if diff := cmp.Diff(wantVerified, fields(audit.ActionVerified)); diff != "" {
		t.Errorf("apply.verified fields (-want +got):\n%s", diff)
	}
	if hash := eval(`[location.hash]`); !strings.Contains(hash[0], "checkpoints=1") {
		t.Errorf("address %s does not keep the choice to show checkpoints", hash[0])
	}
	browsertest.Screenshot(t, tab, "dashboard-audit-checkpoints", false)

	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#audit-checkpoints`))); err != nil {
		t.Fatal(err)
	}
	waitFor("the checkpoint row to go", `document.querySelectorAll('#audit-body tr[data-action="apply.verified"]').length === 0 && document.querySelectorAll('#audit-body tr[data-action="apply"]').length > 0`)
}
