package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// forgetfulStore serves one cluster's desired state without one release, as a hub that lost
// part of its state (or a bug) would: under a higher generation, with or without the
// release's tombstone. Only the hub's agent endpoint reads it this way (GetDesiredState); the
// scheduler plans from ListDesiredStates and keeps writing the real document.
type forgetfulStore struct {
	store.Store
	cluster, release string

	mu        sync.Mutex
	on        bool
	tombstone bool
}

func (s *forgetfulStore) set(on, tombstone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.on, s.tombstone = on, tombstone
}

func (s *forgetfulStore) GetDesiredState(ctx context.Context, cluster string) (store.DesiredState, error) {
	ds, err := s.Store.GetDesiredState(ctx, cluster)
	s.mu.Lock()
	on, tombstone := s.on, s.tombstone
	s.mu.Unlock()
	if err != nil || !on || cluster != s.cluster {
		return ds, err
	}
	doc, err := desired.DecodeDocument(ds.Document)
	if err != nil {
		return ds, err
	}
	doc.Assignments = slices.DeleteFunc(doc.Assignments, func(a desired.Assignment) bool { return a.Release == s.release })
	ds.Generation += 1000
	if tombstone {
		doc.Removed = append(doc.Removed, desired.Tombstone{Release: s.release, Reason: "release-deleted", FleetRevision: "e2e"})
		ds.Generation += 1000
	}
	ds.Document, err = desired.Encode(doc)
	return ds, err
}

const tombstoneFleet = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: "file://%s", branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: baseline}
spec:
  source: platform
  path: baseline
  targets: [{selector: {}}]
  namespace: platform-system
  createNamespace: true
  prune: true
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: platform
  path: web
  targets: [{selector: {}}]
  namespace: web
  createNamespace: true
  prune: true
  interval: 2s
`

// TestRemovalNeedsATombstone: a real hub serves a real agent a desired state that lacks a
// release it applied. Without the release's tombstone the agent refuses the document, prunes
// nothing and the hub records the refusal; with the tombstone, the release is pruned.
func TestRemovalNeedsATombstone(t *testing.T) {
	t.Parallel()
	srcDir, fleetDir := t.TempDir(), t.TempDir()
	newRepo(t, srcDir, map[string]string{
		"baseline/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform-settings}\ndata: {residency: eu-only}\n",
		"web/web.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {replicas: \"3\"}\n",
	})
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": fmt.Sprintf(tombstoneFleet, srcDir)})
	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{"eu-1": {"env": "prod"}})
	f.waitStatus("first convergence", 90*time.Second, converged("", map[string][]string{"eu-1": {"baseline", "web"}}))
	baselineApplied := func() bool {
		_, ok := configMapData(t, f.clusters["eu-1"], "platform-system", "platform-settings", "residency")
		return ok
	}
	if !baselineApplied() {
		t.Fatal("baseline's ConfigMap was not applied")
	}

	forgetful := &forgetfulStore{cluster: "eu-1", release: "baseline"}
	f.wrapStore = func(st store.Store) store.Store { forgetful.Store = st; return forgetful }
	f.stopAgent("eu-1")
	f.hubStop()
	f.startHub()
	forgetful.set(true, false)
	since := time.Now()
	// The agent's watch reads the desired state when it connects.
	f.startAgent("eu-1", "")

	t.Run("without a tombstone the document is refused and nothing pruned", func(t *testing.T) {
		var refusal hubclient.AuditRecord
		eventually.Within(t, 90*time.Second, eventually.True("the refusal audited, or baseline pruned", func() bool {
			if !baselineApplied() {
				return true
			}
			recs, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Cluster: "eu-1", Action: "desired.refused", Since: since})
			if err != nil || len(recs) == 0 {
				return false
			}
			refusal = recs[len(recs)-1]
			return true
		}))
		if !baselineApplied() {
			t.Fatal("baseline's ConfigMap was pruned on a desired state without a tombstone")
		}
		reason, _ := refusal.Detail["reason"].(string)
		if !strings.Contains(reason, `drops release "baseline" without a tombstone; refused, nothing pruned`) {
			t.Errorf("refusal reason %q; want it to name baseline and say nothing was pruned", reason)
		}
		// The agent keeps running what it accepted, and its reports keep reaching the hub:
		// web is reconciled again (every 2s) and reported after the refusal.
		refusedAt := refusal.Time
		f.waitStatus("web reported after the refusal", 60*time.Second, func(st hubclient.StatusView) bool {
			for _, a := range st.Assignments {
				if a.Release == "web" && a.Cluster == "eu-1" && a.ReportedAt != nil && a.ReportedAt.After(refusedAt) {
					return true
				}
			}
			return false
		})
		if !baselineApplied() {
			t.Fatal("baseline's ConfigMap was pruned after the refusal")
		}
	})

	t.Run("with the tombstone the release is pruned", func(t *testing.T) {
		forgetful.set(true, true)
		f.stopAgent("eu-1")
		f.startAgent("eu-1", "")
		eventually.Within(t, 90*time.Second, eventually.True("baseline pruned", func() bool { return !baselineApplied() }))
		if _, ok := configMapData(t, f.clusters["eu-1"], "web", "web", "replicas"); !ok {
			t.Error("web's ConfigMap was pruned with baseline")
		}
	})
}
