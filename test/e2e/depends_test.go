package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// dependsFleet: web depends on db; reports depends on cache, which no cluster here gets.
func dependsFleet(repoURL string) string {
	release := func(name, selector, extra string) string {
		return fmt.Sprintf(`---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: %s}
spec:
  source: apps
  path: apps/%s
  targets: [{selector: {%s}}]
  namespace: %s
  createNamespace: true
  interval: 2s
%s`, name, name, selector, name, extra)
	}
	return fmt.Sprintf("apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: apps}\nspec:\n  git: {url: %q, branch: main}\n  interval: 1h\n", repoURL) +
		release("db", "", "  wait: true\n  timeout: 2s\n") +
		release("web", "", "  dependsOn: [db]\n") +
		release("cache", "matchLabels: {env: staging}", "") +
		release("reports", "", "  dependsOn: [cache]\n")
}

// A Deployment no controller ever rolls out (these clusters run no kubelet): never Ready.
const stuckDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: registry.example/db:1}]}
`

// TestDependsOnOrdersReleasesOnACluster: a release waits on each cluster until the releases
// it depends on are Ready there, says so in status, and is applied once they are.
func TestDependsOnOrdersReleasesOnACluster(t *testing.T) {
	t.Parallel()
	srcDir, fleetDir := t.TempDir(), t.TempDir()
	src := newRepo(t, srcDir, map[string]string{
		"apps/db/db.yaml":           stuckDeployment,
		"apps/web/web.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {db: db.db}\n",
		"apps/cache/cache.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cache}\ndata: {a: b}\n",
		"apps/reports/reports.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: reports}\ndata: {a: b}\n",
	})
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": dependsFleet("file://" + srcDir)})
	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{"eu-1": {"env": "prod"}})
	eu1 := f.clusters["eu-1"]
	view := func(st hubclient.StatusView, release string) hubclient.AssignmentView {
		for _, a := range st.Assignments {
			if a.Release == release && a.Cluster == "eu-1" {
				return a
			}
		}
		return hubclient.AssignmentView{}
	}

	// db never becomes Ready: web waits for it and applies nothing; reports waits for a
	// release this cluster does not get.
	st := f.waitStatus("web and reports waiting, db failed", 90*time.Second, func(st hubclient.StatusView) bool {
		return view(st, "db").Phase == hubclient.PhaseFailed &&
			view(st, "web").Phase == hubclient.PhaseWaiting && view(st, "reports").Phase == hubclient.PhaseWaiting
	})
	if got, want := view(st, "web").Waiting, `release "db" is not Ready`; got != want {
		t.Errorf("web waits for %q, want %q", got, want)
	}
	if got, want := view(st, "reports").Waiting, `release "cache" is not assigned to this cluster`; got != want {
		t.Errorf("reports waits for %q, want %q", got, want)
	}
	if _, ok := configMapData(t, eu1, "web", "web", "db"); ok {
		t.Fatal("web was applied while db was not Ready")
	}
	if got := view(st, "web").AppliedRevision; got != "" {
		t.Errorf("web's applied revision %q while waiting; want none", got)
	}

	// db fixed: Ready, and web follows.
	fix := src.commit("db: a config, no deployment", map[string]string{
		"apps/db/db.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\ndata: {ready: \"yes\"}\n",
	})
	st = f.waitStatus("db Ready, then web", 90*time.Second, func(st hubclient.StatusView) bool {
		db, web := view(st, "db"), view(st, "web")
		return db.Phase == hubclient.PhaseReady && containsCommit(db.AppliedRevision, fix) &&
			web.Phase == hubclient.PhaseReady && containsCommit(web.AppliedRevision, fix)
	})
	if _, ok := configMapData(t, eu1, "web", "web", "db"); !ok {
		t.Fatal("web reported Ready but its ConfigMap is missing")
	}
	if got := view(st, "reports"); got.Phase != hubclient.PhaseWaiting {
		t.Errorf("reports is %s, want still Waiting for cache", got.Phase)
	}
}
