package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hubapi"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// hubReplica is one `flotilla hub` process of a replicated hub.
type hubReplica struct {
	id, dir, agentAddr, apiAddr string
	proc                        *proc
	client                      *hubapi.Client
}

func (r *hubReplica) agentURL() string { return "https://" + r.agentAddr }

// startReplica starts replica id on the shared database dsn, with a data dir of its own, and
// waits until its user API answers.
func startReplica(t *testing.T, root, id, dsn, fleetURL string) *hubReplica {
	t.Helper()
	r := &hubReplica{id: id, dir: filepath.Join(root, id), agentAddr: freeAddr(t), apiAddr: freeAddr(t)}
	r.proc = startProc(t, filepath.Join(root, id+".log"), "hub", "--data-dir", r.dir, "--store", dsn,
		"--replica-id", id, "--lease-ttl", "3s", "--fleet", fleetURL, "--fleet-branch", "main", "--fleet-path", "fleet",
		"--agent-addr", r.agentAddr, "--api-addr", r.apiAddr, "--fleet-interval", "300ms", "--log-level", "debug")
	deadline := time.Now().Add(30 * time.Second)
	for {
		token, err := os.ReadFile(filepath.Join(r.dir, "admin.token"))
		if err == nil {
			r.client, err = hubapi.NewClient(hubapi.Config{Hub: "https://" + r.apiAddr, Token: strings.TrimSpace(string(token)), CAFile: filepath.Join(r.dir, "ca.crt")})
			if err == nil {
				if _, err = r.client.Clusters(t.Context()); err == nil {
					return r
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub replica %s did not come up: %v\n%s", id, err, tail(r.proc.log))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leaseHolder is the replica whose log says it holds the controller lease last.
func leaseHolder(replicas ...*hubReplica) string {
	for _, r := range replicas {
		data, _ := os.ReadFile(r.proc.log)
		lines := strings.Split(string(data), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.Contains(lines[i], "lease changed hands") {
				if strings.Contains(lines[i], "held=true") {
					return r.id
				}
				break
			}
		}
	}
	return ""
}

// TestHAReplicaKilledMidWave runs two hub replicas on one PostgreSQL database, with the agents
// spread over both (each told both addresses, its own first), kills the replica that polls
// the sources in the middle of a rollout, and checks that every cluster converges, that the
// surviving replica takes over polling (a later commit still rolls out), and that every report
// the agents produced was ingested exactly once.
func TestHAReplicaKilledMidWave(t *testing.T) {
	repoDir, root := t.TempDir(), t.TempDir()
	rp := newRepo(t, repoDir, faultFleet("file://"+repoDir, 50, "10m"))
	dsn := pgtest.NewDatabase(t)
	names := []string{"a", "b", "c", "d"}
	clusters := clustertest.StartAll(t, names...)

	r1 := startReplica(t, root, "replica-1", dsn, "file://"+repoDir)
	waitFor(t, "replica-1 holds the controller lease", 30*time.Second, func() bool { return leaseHolder(r1) == "replica-1" })
	r2 := startReplica(t, root, "replica-2", dsn, "file://"+repoDir)
	replicas := []*hubReplica{r1, r2}

	// procFleet's accounting and status helpers, on replica-2's API: it survives.
	f := &procFleet{
		t: t, dir: root, hub: r2.proc, client: r2.client,
		clusters: map[string]*localcluster.Cluster{}, agents: map[string]*proc{},
		produced: map[string]int64{}, lost: map[string]int64{}, firstSeq: map[string]uint64{},
	}
	t.Cleanup(func() {
		for _, a := range f.agents {
			a.stop()
		}
		for _, r := range replicas {
			r.proc.stop()
		}
	})
	for i, name := range names {
		f.clusters[name] = clusters[name]
		f.firstSeq[name] = 1
		// Registered through either replica; each agent starts on "its" replica.
		home, other := replicas[i%2], replicas[(i+1)%2]
		j, err := home.client.AddCluster(t.Context(), name, map[string]string{"env": "prod"})
		if err != nil {
			t.Fatal(err)
		}
		f.agents[name] = startProc(t, filepath.Join(root, "agent-"+name+".log"), "agent",
			"--hub", home.agentURL()+","+other.agentURL(), "--join-token", j.JoinToken,
			"--kubeconfig", clusters[name].KubeconfigPath(), "--state-dir", f.stateDir(name),
			"--heartbeat-interval", "1s", "--report-interval", "200ms", "--log-level", "debug")
	}
	f.waitStatus("first convergence", 2*time.Minute, everyWebReady("", len(names)))

	commit := rp.commit("v2 of every config", map[string]string{"apps/web/configs.yaml": configMaps(50, "v2")})
	f.waitStatus("rollout started", time.Minute, func(st hubapi.StatusView) bool {
		for _, a := range st.Assignments {
			if containsCommit(a.DesiredRevision, commit) {
				return true
			}
		}
		return false
	})
	r1.proc.kill() // the lease holder, half of the agents' replica, mid-wave
	killed := time.Now()
	f.waitStatus("convergence with one replica left", 2*time.Minute, everyWebReady(commit, len(names)))
	t.Logf("every cluster converged %s after replica-1 was killed", time.Since(killed).Round(10*time.Millisecond))
	for _, name := range names {
		if n := countConfigMaps(t, f, name); n != 50 {
			t.Errorf("cluster %s has %d ConfigMaps, want 50", name, n)
		}
	}

	waitFor(t, "replica-2 takes the lease over", 30*time.Second, func() bool { return leaseHolder(r2) == "replica-2" })
	commit = rp.commit("v3 of every config", map[string]string{"apps/web/configs.yaml": configMaps(50, "v3")})
	f.waitStatus("a commit after the takeover rolls out", 2*time.Minute, everyWebReady(commit, len(names)))
	for _, name := range names {
		if v, ok := configMapData(t, clusters[name], "web", "cfg-0000", "version"); !ok || v != "v3" {
			t.Errorf("cluster %s: cfg-0000 version = %q (found %v), want v3", name, v, ok)
		}
	}
	f.checkReports()
	if t.Failed() {
		for _, r := range replicas {
			fmt.Fprintf(os.Stderr, "--- %s log:\n%s\n", r.id, tail(r.proc.log))
		}
	}
}
