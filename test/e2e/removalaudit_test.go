package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestRemovalIsAudited: a relabel that takes a release off a cluster is audited twice: by the
// hub when the release leaves the desired state (who relabelled, why, at which fleet commit),
// and once the agent has pruned it, with the objects it deleted.
func TestRemovalIsAudited(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	rp := newRepo(t, repoDir, fleetFiles(repoURL))
	head := rp.commit("nothing", map[string]string{"README.md": "demo fleet\n"})
	f := newFleet(t, repoURL, map[string]map[string]string{"eu-staging": {"env": "staging", "region": "eu"}})
	f.waitStatus("first convergence", 2*time.Minute, converged(head, map[string][]string{"eu-staging": {"baseline", "staging-tools"}}))
	if _, ok := configMapData(t, f.clusters["eu-staging"], "staging-tools", "debug-settings", "logLevel"); !ok {
		t.Fatal("staging-tools was not applied")
	}

	prod := "prod"
	if _, err := f.client.LabelCluster(t.Context(), "eu-staging", map[string]*string{"env": &prod}); err != nil {
		t.Fatal(err)
	}
	var removed, pruned hubclient.AuditRecord
	eventually.Within(t, time.Minute, func() error {
		recs, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Cluster: "eu-staging"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			switch {
			case r.Release != "staging-tools":
			case r.Action == "assignment.removed":
				removed = r
			case r.Action == "release.removed":
				pruned = r
			}
		}
		if removed.Action == "" || pruned.Action == "" {
			return fmt.Errorf("removal not audited (assignment.removed and release.removed of staging-tools):\n%s", dumpAudit(recs))
		}
		return nil
	})
	// The relabel was made with the hub's bootstrap admin token.
	if removed.Actor != "token:admin" || removed.Detail["reason"] != "not-selected" || removed.Detail["fleetRevision"] == "" {
		t.Errorf("assignment.removed = %+v: want the admin token as actor, reason not-selected and the fleet revision", removed)
	}
	objects, _ := pruned.Detail["prunedObjects"].([]any)
	if pruned.Detail["removedBy"] != removed.Actor || pruned.Detail["reason"] != "not-selected" ||
		!slices.Contains(objects, any("configmap/debug-settings in staging-tools")) {
		t.Errorf("release.removed detail = %v: want the actor, the reason and the pruned ConfigMap", pruned.Detail)
	}
	if _, ok := configMapData(t, f.clusters["eu-staging"], "staging-tools", "debug-settings", "logLevel"); ok {
		t.Error("the release's ConfigMap is still there after its removal was audited")
	}
}
