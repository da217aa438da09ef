package e2e

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestDeletionIsDrift: an object deleted by hand is drift. With self-heal on (the default)
// the agent re-creates it and the hub audits drift.healed naming the object.
func TestDeletionIsDrift(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	newRepo(t, repoDir, map[string]string{
		"fleet/fleet.yaml": fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: %s, branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec: {source: apps, path: apps/web, targets: [{selector: {}}], namespace: web, createNamespace: true, interval: 2s}
`, repoURL),
		"apps/web/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: production}\n",
	})
	f := newFleet(t, repoURL, map[string]map[string]string{"edge": {"env": "prod"}})
	f.waitStatus("first convergence", 2*time.Minute, converged("", map[string][]string{"edge": {"web"}}))

	since := time.Now()
	if out, err := f.clusters["edge"].Kubectl(t.Context(), nil, "delete", "configmap", "settings", "-n", "web"); err != nil {
		t.Fatalf("kubectl delete: %v\n%s", err, out)
	}
	var healed hubclient.AuditRecord
	eventually.Within(t, time.Minute, func() error {
		recs, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Cluster: "edge", Release: "web", Action: "drift.healed", Since: since})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			return errors.New("no drift.healed record since the ConfigMap was deleted")
		}
		healed = recs[0]
		return nil
	})
	objects, _ := healed.Detail["objects"].([]any)
	var found bool
	for _, o := range objects {
		m, _ := o.(map[string]any)
		paths, _ := m["paths"].([]any)
		found = found || (m["object"] == "configmap/settings" && slices.Contains(paths, any("(deleted)")))
	}
	if !found {
		t.Errorf("drift.healed detail = %v: want configmap/settings with path (deleted)", healed.Detail)
	}
	if v, ok := configMapData(t, f.clusters["edge"], "web", "settings", "mode"); !ok || v != "production" {
		t.Errorf("the deleted ConfigMap was not re-created: %q, %v", v, ok)
	}
}
