package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// faultFleet is a fleet repository with one release "web" on every cluster: n ConfigMaps and a
// Deployment, self-healing, checked for drift every interval.
func faultFleet(repoURL string, n int, interval string) map[string]string {
	// The test's Git server speaks plain HTTP, which a source must accept explicitly.
	insecure := strings.HasPrefix(repoURL, "http://")
	files := map[string]string{
		"fleet/fleet.yaml": fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: %s, branch: main, insecure: %t}
  interval: 2s
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: apps
  path: apps/web
  targets: [{selector: {}}]
  namespace: web
  createNamespace: true
  prune: true
  selfHeal: true
  interval: %s
`, repoURL, insecure, interval),
		"apps/web/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
`,
	}
	files["apps/web/configs.yaml"] = configMaps(n, "v1")
	return files
}

func configMaps(n int, version string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-%04d}\ndata: {version: %s}\n", i, version)
	}
	return b.String()
}

// everyWebReady: the web release is Ready at commit on every cluster.
func everyWebReady(commit string, clusters int) func(hubclient.StatusView) bool {
	return func(st hubclient.StatusView) bool {
		n := 0
		for _, a := range st.Assignments {
			if a.Release == "web" && a.Phase == "Ready" && a.AppliedRevision == a.DesiredRevision && containsCommit(a.DesiredRevision, commit) {
				n++
			}
		}
		return n == clusters
	}
}

func countConfigMaps(t *testing.T, f *procFleet, cluster string) int {
	t.Helper()
	out, err := f.clusters[cluster].Kubectl(t.Context(), nil, "-n", "web", "get", "configmaps", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(out), "configmap/cfg-")
}

func TestFaultHubKilledMidRollout(t *testing.T) {
	// Not in parallel: it kills hub processes and replicas and waits on their recovery
	// within fixed bounds, which other fleets on the two cores made it miss (seen in CI).
	repoDir := t.TempDir()
	rp := newRepo(t, repoDir, faultFleet("file://"+repoDir, 200, "10m"))
	f := newProcFleet(t, "file://"+repoDir, map[string]map[string]string{"a": {"env": "prod"}, "b": {"env": "prod"}})
	f.waitStatus("first convergence", 2*time.Minute, everyWebReady("", 2))

	// Where each agent stands before the commit: its desired generation and reconciles.
	gen0, rec0 := map[string]float64{}, map[string]float64{}
	for name := range f.clusters {
		m := f.scrapeAgent(name)
		gen0[name], rec0[name] = metric(m, "flotilla_agent_desired_generation"), metric(m, "flotilla_agent_reconciles_total", `release="web"`)
	}
	commit := rp.commit("v2 of every config", map[string]string{"apps/web/configs.yaml": configMaps(200, "v2")})
	// Kill the hub as soon as it has handed out the new desired state.
	f.waitStatus("rollout started", time.Minute, func(st hubclient.StatusView) bool {
		for _, a := range st.Assignments {
			if containsCommit(a.DesiredRevision, commit) {
				return true
			}
		}
		return false
	})
	f.hub.kill()
	// Agents finish applying and queue their reports: each has seen its watch end (so no
	// desired state is still on its way), and one that got the new desired state before
	// has reconciled it since.
	eventually.Within(t, time.Minute, func() error {
		for name := range f.clusters {
			m := f.scrapeAgent(name)
			connected, gen := metric(m, "flotilla_agent_hub_connected"), metric(m, "flotilla_agent_desired_generation")
			if rec := metric(m, "flotilla_agent_reconciles_total", `release="web"`); connected != 0 || gen != gen0[name] && rec == rec0[name] {
				return fmt.Errorf("agent %s: hub connected %v, desired generation %v (%v before the commit), web reconciled %v times (%v before)",
					name, connected, gen, gen0[name], rec, rec0[name])
			}
		}
		return nil
	})
	f.startHub()
	start := time.Now()
	f.waitStatus("convergence after the hub came back", 2*time.Minute, everyWebReady(commit, 2))
	t.Logf("converged %s after the hub restarted", time.Since(start).Round(10*time.Millisecond))
	f.checkReports()
}

func TestFaultPartitionWithDriftHealed(t *testing.T) {
	// Not in parallel: it kills hub processes and replicas and waits on their recovery
	// within fixed bounds, which other fleets on the two cores made it miss (seen in CI).
	repoDir := t.TempDir()
	newRepo(t, repoDir, faultFleet("file://"+repoDir, 5, "6s"))
	f := newProcFleet(t, "file://"+repoDir, map[string]map[string]string{"a": {"env": "prod"}, "b": {"env": "prod"}})
	f.waitStatus("first convergence", 2*time.Minute, everyWebReady("", 2))

	// Cut agent a off the hub for longer than many report intervals (200ms) and heartbeats (1s).
	f.proxies["a"].Blackhole(true)
	f.proxies["a"].Cut()
	if _, err := f.clusters["a"].Kubectl(t.Context(), nil, "-n", "web", "patch", "deployment/web", "--type=merge", "-p", `{"spec":{"replicas":7}}`); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, time.Minute, eventually.True("drift healed while partitioned", func() bool {
		out, err := f.clusters["a"].Kubectl(t.Context(), nil, "-n", "web", "get", "deployment/web", "-o", "jsonpath={.spec.replicas}")
		return err == nil && string(out) == "2"
	}))
	// The partition holds on both sides: the hub has lost a's watch, and a holds the report
	// of its healing in its outbox, undelivered.
	eventually.Within(t, time.Minute, func() error {
		h, m := f.scrapeHub(), f.scrapeAgent("a")
		hub, connected, outbox := metric(h, "flotilla_hub_agents_connected"), metric(m, "flotilla_agent_hub_connected"), metric(m, "flotilla_agent_outbox_depth")
		if hub != 1 || connected != 0 || outbox < 1 {
			return fmt.Errorf("agents connected to the hub %v, want 1 (b); agent a: hub connected %v, want 0; outbox %v, want the healing report", hub, connected, outbox)
		}
		return nil
	})
	f.proxies["a"].Blackhole(false)
	f.proxies["a"].Cut() // drop the stalled connections so the agent reconnects at once
	f.waitStatus("reconverged after the partition", 2*time.Minute, everyWebReady("", 2))
	f.checkReports()
}

func TestFaultClusterAPIServerDown(t *testing.T) {
	// Not in parallel: it kills hub processes and replicas and waits on their recovery
	// within fixed bounds, which other fleets on the two cores made it miss (seen in CI).
	repoDir := t.TempDir()
	rp := newRepo(t, repoDir, faultFleet("file://"+repoDir, 5, "3s"))
	f := newProcFleet(t, "file://"+repoDir, map[string]map[string]string{"a": {"env": "prod"}, "b": {"env": "prod"}})
	f.waitStatus("first convergence", 2*time.Minute, everyWebReady("", 2))

	f.clusters["b"].APIServer().Kill()
	commit := rp.commit("v2", map[string]string{"apps/web/configs.yaml": configMaps(5, "v2")})
	st := f.waitStatus("a converged, b failing", 2*time.Minute, func(st hubclient.StatusView) bool {
		var aReady, bFailed bool
		for _, as := range st.Assignments {
			aReady = aReady || (as.Cluster == "a" && as.Phase == "Ready" && containsCommit(as.AppliedRevision, commit))
			bFailed = bFailed || (as.Cluster == "b" && as.Phase == "Failed" && containsCommit(as.ReportedRevision, commit))
		}
		return aReady && bFailed
	})
	for _, as := range st.Assignments {
		if as.Cluster == "b" && !strings.Contains(as.Error, "connect") {
			t.Errorf("b's error does not say the API server is unreachable: %q", as.Error)
		}
	}
	if err := f.clusters["b"].RestartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.waitStatus("b converged after its API server came back", 2*time.Minute, everyWebReady(commit, 2))
	f.checkReports()
}

func TestFaultAgentKilledMidApply(t *testing.T) {
	// Not in parallel: it kills hub processes and replicas and waits on their recovery
	// within fixed bounds, which other fleets on the two cores made it miss (seen in CI).
	repoDir := t.TempDir()
	rp := newRepo(t, repoDir, faultFleet("file://"+repoDir, 5, "10m"))
	f := newProcFleet(t, "file://"+repoDir, map[string]map[string]string{"a": {"env": "prod"}})
	f.waitStatus("first convergence", 2*time.Minute, everyWebReady("", 1))

	const n = 1500
	commit := rp.commit("many more configs", map[string]string{"apps/web/configs.yaml": configMaps(n, "v2")})
	eventually.Within(t, time.Minute, eventually.True("apply under way", func() bool { return countConfigMaps(t, f, "a") > 100 }))
	f.agents["a"].kill()
	half := countConfigMaps(t, f, "a")
	t.Logf("agent killed with %d of %d ConfigMaps applied", half, n)
	f.startAgent("a", "")
	f.waitStatus("converged after the agent restarted", 2*time.Minute, everyWebReady(commit, 1))
	if got := countConfigMaps(t, f, "a"); got != n {
		t.Errorf("%d ConfigMaps after convergence, want %d", got, n)
	}
	// Nothing orphaned: drop all but 10 from the release and everything else is pruned.
	commit = rp.commit("back to ten", map[string]string{"apps/web/configs.yaml": configMaps(10, "v3")})
	f.waitStatus("converged on ten", 2*time.Minute, everyWebReady(commit, 1))
	if got := countConfigMaps(t, f, "a"); got != 10 {
		t.Errorf("%d ConfigMaps after pruning to 10: the killed apply left orphans", got)
	}
	eventually.Within(t, 30*time.Second, eventually.True("agent metrics reflect the last reconcile", func() bool {
		m := f.scrapeAgent("a")
		return strings.Contains(m, `flotilla_agent_objects{release="web"} 12`) && strings.Contains(m, "flotilla_agent_hub_connected 1") &&
			strings.Contains(m, "flotilla_agent_outbox_depth 0")
	}))
	hubMetrics := f.scrapeHub()
	for _, want := range []string{
		"flotilla_hub_agents_connected 1", `flotilla_hub_reports_total{outcome="ingested"}`,
		"flotilla_hub_artifact_bytes_served_total", `flotilla_hub_source_poll_duration_seconds_count{source="apps"}`,
		"flotilla_hub_desired_state_updates_total", `flotilla_hub_store_duration_seconds_count{operation="ingest_report"}`,
	} {
		if !strings.Contains(hubMetrics, want) {
			t.Errorf("hub metrics lack %q", want)
		}
	}
	if strings.Contains(hubMetrics, `cluster="`) {
		t.Error("hub metrics carry a per-cluster label: cardinality would grow with the fleet")
	}
	f.checkReports()
}

func TestFaultAgentStateDirWiped(t *testing.T) {
	// Not in parallel: it kills hub processes and replicas and waits on their recovery
	// within fixed bounds, which other fleets on the two cores made it miss (seen in CI).
	repoDir := t.TempDir()
	rp := newRepo(t, repoDir, faultFleet("file://"+repoDir, 5, "10m"))
	f := newProcFleet(t, "file://"+repoDir, map[string]map[string]string{"a": {"env": "prod"}})
	f.waitStatus("first convergence", 2*time.Minute, everyWebReady("", 1))
	uid := func() string {
		out, err := f.clusters["a"].Kubectl(t.Context(), nil, "-n", "web", "get", "configmap/cfg-0000", "-o", "jsonpath={.metadata.uid}")
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	before := uid()

	f.stopAgent("a")
	st, err := readAgentStats(f, "a")
	if err != nil {
		t.Fatal(err)
	}
	f.produced["a"] += int64(st.NextSeq - f.firstSeq["a"])
	f.lost["a"] += int64(st.Outbox)
	if err := os.RemoveAll(f.stateDir("a")); err != nil {
		t.Fatal(err)
	}
	v, err := f.client.Cluster(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	f.firstSeq["a"] = v.LastReportSeq + 1
	j, err := f.client.NewJoinToken(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	commit := rp.commit("v2 after the disk loss", map[string]string{"apps/web/configs.yaml": configMaps(6, "v2")})
	f.startAgent("a", j.JoinToken)
	f.waitStatus("converged after re-joining", 2*time.Minute, everyWebReady(commit, 1))
	if after := uid(); after != before {
		t.Errorf("cfg-0000 was re-created (uid %s -> %s): the new agent did not take over the inventory", before, after)
	}
	if got := countConfigMaps(t, f, "a"); got != 6 {
		t.Errorf("%d ConfigMaps, want 6", got)
	}
	f.checkReports()
}

func TestFaultGitServerDown(t *testing.T) {
	// Not in parallel: it kills hub processes and replicas and waits on their recovery
	// within fixed bounds, which other fleets on the two cores made it miss (seen in CI).
	root := t.TempDir()
	apps := newRepo(t, filepath.Join(root, "apps"), map[string]string{"apps/web/configs.yaml": configMaps(5, "v1")})
	git := newGitServer(t, root)
	fleetDir := t.TempDir()
	files := faultFleet(git.url("apps/.git"), 0, "10m")
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": files["fleet/fleet.yaml"]})
	f := newProcFleet(t, "file://"+fleetDir, map[string]map[string]string{"a": {"env": "prod"}, "b": {"env": "prod"}})
	f.waitStatus("first convergence", 2*time.Minute, everyWebReady("", 2))

	git.down()
	apps.commit("not yet visible", map[string]string{"apps/web/configs.yaml": configMaps(5, "v2")})
	st := f.waitStatus("source error visible", time.Minute, func(st hubclient.StatusView) bool {
		return len(st.Sources) == 1 && st.Sources[0].Error != ""
	})
	if !strings.Contains(st.Sources[0].Error, "apps") {
		t.Errorf("source error does not name the source: %q", st.Sources[0].Error)
	}
	// Several polls fail: two more than had when the error showed.
	failed := metric(f.scrapeHub(), "flotilla_hub_source_poll_errors_total", `source="apps"`)
	eventually.Within(t, time.Minute, func() error {
		if n := metric(f.scrapeHub(), "flotilla_hub_source_poll_errors_total", `source="apps"`); n < failed+2 {
			return fmt.Errorf("%v failed polls of apps, want %v", n, failed+2)
		}
		return nil
	})
	st = f.waitStatus("clusters keep their state", time.Minute, everyWebReady("", 2))
	for _, c := range []string{"a", "b"} {
		if n := countConfigMaps(t, f, c); n != 5 {
			t.Errorf("cluster %s has %d ConfigMaps while the Git server is down, want 5: something was pruned", c, n)
		}
	}

	git.up()
	head := apps.commit("v3", map[string]string{"apps/web/configs.yaml": configMaps(5, "v3")})
	f.waitStatus("convergence once the Git server is back", 2*time.Minute, func(st hubclient.StatusView) bool {
		return st.Sources[0].Error == "" && everyWebReady(head, 2)(st)
	})
	f.checkReports()
}
