package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestBadInput commits one kind of bad input at a time to one release and checks that its
// assignment fails with an error naming the thing, that nothing of the bad commit is applied,
// and that the other release on the same cluster keeps converging.
func TestBadInput(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	fleetYAML := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: %s, branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: good}
spec: {source: apps, path: apps/good, targets: [{selector: {}}], namespace: good, createNamespace: true, prune: true}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: bad}
spec: {source: apps, path: apps/bad, targets: [{selector: {}}], namespace: bad, createNamespace: true, prune: true}
`, repoURL)
	cm := func(name, v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {v: \"" + v + "\"}\n"
	}
	rp := newRepo(t, repoDir, map[string]string{
		"fleet/fleet.yaml":     fleetYAML,
		"apps/good/good.yaml":  cm("good", "1"),
		"apps/bad/before.yaml": cm("before", "1"),
	})
	f := newFleet(t, repoURL, map[string]map[string]string{"edge": {"env": "prod"}})
	f.waitStatus("first convergence", 2*time.Minute, converged("", map[string][]string{"edge": {"bad", "good"}}))

	cases := []struct {
		name      string
		files     map[string]string
		wantError []string
	}{
		{
			name:      "malformed YAML",
			files:     map[string]string{"apps/bad/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data: [\n"},
			wantError: []string{"apps/bad/broken.yaml:", "yaml"},
		},
		{
			name:      "invalid kustomization",
			files:     map[string]string{"apps/bad/kustomization.yaml": "resources: [missing.yaml]\n"},
			wantError: []string{"kustomization", "missing.yaml"},
		},
		{
			name:      "object the API server rejects",
			files:     map[string]string{"apps/bad/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: broken}\nspec: {ports: [{port: 99999}]}\n"},
			wantError: []string{"rejected, nothing applied", "service/broken", "99999"},
		},
		{
			// Issue 17's reproduction: the object is validated only after its namespace exists,
			// and used to enter the inventory before that, breaking every release on the cluster.
			name: "invalid name in a namespace the same commit creates",
			files: map[string]string{"apps/bad/extra.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: bad-extra}\n---\n" +
				"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Monitor_Agent, namespace: bad-extra}\ndata: {a: b}\n"},
			wantError: []string{"rejected, nothing applied but the namespaces", "configmap/Monitor_Agent", "bad-extra"},
		},
		{
			name:      "undefined variable",
			files:     map[string]string{"apps/bad/vars.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars}\ndata: {region: \"${region}\"}\n"},
			wantError: []string{"undefined variable", "region", "apps/bad/vars.yaml", "ConfigMap"},
		},
	}
	goodVersion := 1
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			goodVersion++
			files := map[string]string{
				"apps/good/good.yaml":  cm("good", fmt.Sprint(goodVersion)),
				"apps/bad/before.yaml": cm("before", fmt.Sprint(goodVersion)), // must not be applied
			}
			for k, v := range tc.files {
				files[k] = v
			}
			commit := rp.commit("bad input: "+tc.name, files)
			st := f.waitStatus("bad release failed, good release converged", time.Minute, func(st hubclient.StatusView) bool {
				var goodOK, badFailed bool
				for _, a := range st.Assignments {
					goodOK = goodOK || (a.Release == "good" && a.Phase == "Ready" && containsCommit(a.AppliedRevision, commit))
					// Nothing of it was applied: the failure is on the revision it reported.
					badFailed = badFailed || (a.Release == "bad" && a.Phase == "Failed" && containsCommit(a.ReportedRevision, commit))
				}
				return goodOK && badFailed
			})
			for _, a := range st.Assignments {
				if a.Release != "bad" {
					continue
				}
				t.Logf("bad release error: %s", a.Error)
				for _, w := range tc.wantError {
					if !strings.Contains(a.Error, w) {
						t.Errorf("error %q does not name %q", a.Error, w)
					}
				}
			}
			if v, _ := configMapData(t, f.clusters["edge"], "good", "good", "v"); v != fmt.Sprint(goodVersion) {
				t.Errorf("good release not applied: v = %q", v)
			}
			if v, _ := configMapData(t, f.clusters["edge"], "bad", "before", "v"); v != "1" {
				t.Errorf("half-applied: the bad commit changed configmap/before to %q", v)
			}
			// Back to a good state for the next case.
			undo := map[string]string{"apps/bad/before.yaml": cm("before", "1")}
			for k := range tc.files {
				undo[k] = ""
			}
			head := rp.commit("undo: "+tc.name, undo)
			f.waitStatus("recovered", time.Minute, converged(head, map[string][]string{"edge": {"bad", "good"}}))
		})
	}

	t.Run("fleet configuration referring to a missing source", func(t *testing.T) {
		broken := strings.Replace(fleetYAML, "spec: {source: apps, path: apps/bad", "spec: {source: nowhere, path: apps/bad", 1)
		commit := rp.commit("release with a missing source", map[string]string{"fleet/fleet.yaml": broken})
		// The source reads the fleet's own repository: the rejected commit's manifests roll
		// out, and the status says so.
		st := f.waitStatus("fleet error and rollout notice visible", time.Minute, func(st hubclient.StatusView) bool {
			return st.Fleet.Error != "" && st.Fleet.RolloutNotice != ""
		})
		for _, w := range []string{"fleet/fleet.yaml@" + commit[:7] + " line 13: Release/bad: spec.source", "spec.source", `"nowhere"`} {
			if !strings.Contains(st.Fleet.Error, w) {
				t.Errorf("fleet error %q does not name %q", st.Fleet.Error, w)
			}
		}
		if want := "Commit " + commit[:7] + " rolls out through source 'apps' (same repository as the fleet)"; st.Fleet.RejectedCommit != commit || !strings.HasPrefix(st.Fleet.RolloutNotice, want) {
			t.Errorf("fleet status: rejected commit %q, notice %q; want %s and a notice starting %q", st.Fleet.RejectedCommit, st.Fleet.RolloutNotice, commit, want)
		}
		if len(st.Assignments) != 2 {
			t.Errorf("assignments changed under the invalid configuration:\n%s", dump(st))
		}
	})
}
