package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// hubReplica is one `flotilla hub` process of a replicated hub.
type hubReplica struct {
	id, dir, agentAddr, apiAddr string
	proc                        *proc
	client                      *hubclient.Client
}

func (r *hubReplica) agentURL() string { return "https://" + r.agentAddr }

// startReplica starts replica id on the shared database dsn, with a data dir of its own, and
// waits until its user API answers.
func startReplica(t *testing.T, root, id, dsn, fleetURL string) *hubReplica {
	t.Helper()
	r := &hubReplica{id: id, dir: filepath.Join(root, id), agentAddr: freeAddr(t), apiAddr: freeAddr(t)}
	r.start(t, root, dsn, fleetURL)
	return r
}

// start runs the hub process on its data dir and addresses: on the database dsn as replica
// r.id, or on SQLite in its data dir when dsn is "".
func (r *hubReplica) start(t *testing.T, root, dsn, fleetURL string) {
	t.Helper()
	args := []string{"hub", "--data-dir", r.dir, "--fleet", fleetURL, "--fleet-branch", "main", "--fleet-path", "fleet",
		"--agent-addr", r.agentAddr, "--api-addr", r.apiAddr, "--fleet-interval", "300ms", "--log-level", "debug",
		"--allow-file-sources", filepath.Dir(root)} // the test's repositories are its t.TempDir()s
	if dsn != "" {
		args = append(args, "--store", dsn, "--replica-id", r.id, "--lease-ttl", "3s", "--secrets-key-file", secretsKeyFile(t, root))
	}
	r.proc = startProc(t, filepath.Join(root, r.id+".log"), args...)
	// The first hub on the database keeps the admin token in its admin.token and leaves a copy
	// in root for the test; a replica that joins holds only its hash ("sha256:...").
	shared := filepath.Join(root, "admin.token")
	if err := eventually.Poll(t.Context(), 30*time.Second, func() error {
		token, err := os.ReadFile(filepath.Join(r.dir, "admin.token"))
		if err == nil && bytes.HasPrefix(token, []byte("sha256:")) {
			token, err = os.ReadFile(shared)
		}
		if err != nil {
			return err
		}
		if r.client, err = hubclient.NewClient(hubclient.Config{Hub: "https://" + r.apiAddr, Token: strings.TrimSpace(string(token)), CAFile: filepath.Join(r.dir, "ca.crt")}); err != nil {
			return err
		}
		if _, err := r.client.Clusters(t.Context()); err != nil {
			return err
		}
		if _, err := os.Stat(shared); os.IsNotExist(err) {
			if err := os.WriteFile(shared, token, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("hub %s did not come up: %v\n%s", r.id, err, tail(r.proc.log))
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
	// Not in parallel: it kills hub processes and replicas and waits on their recovery
	// within fixed bounds, which other fleets on the two cores made it miss (seen in CI).
	repoDir, root := t.TempDir(), t.TempDir()
	rp := newRepo(t, repoDir, faultFleet("file://"+repoDir, 50, "10m"))
	dsn := pgtest.NewDatabase(t)
	names := []string{"a", "b", "c", "d"}
	clusters := clustertest.StartAll(t, names...)

	r1 := startReplica(t, root, "replica-1", dsn, "file://"+repoDir)
	eventually.Within(t, 30*time.Second, equal("the controller lease holder", func() string { return leaseHolder(r1) }, "replica-1"))
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
	started := f.waitStatus("rollout started", time.Minute, func(st hubclient.StatusView) bool {
		for _, a := range st.Assignments {
			if containsCommit(a.DesiredRevision, commit) {
				return true
			}
		}
		return false
	})
	r1.proc.kill() // the lease holder, half of the agents' replica, mid-wave
	applied := 0
	for _, a := range started.Assignments {
		if containsCommit(a.AppliedRevision, commit) {
			applied++
		}
	}
	t.Logf("replica-1 killed with %d of %d clusters reporting the new commit applied", applied, len(names))
	killed := time.Now()
	f.waitStatus("convergence with one replica left", 2*time.Minute, everyWebReady(commit, len(names)))
	t.Logf("every cluster converged %s after replica-1 was killed", time.Since(killed).Round(10*time.Millisecond))
	for _, name := range names {
		if n := countConfigMaps(t, f, name); n != 50 {
			t.Errorf("cluster %s has %d ConfigMaps, want 50", name, n)
		}
	}

	eventually.Within(t, 30*time.Second, equal("the controller lease holder after the take-over", func() string { return leaseHolder(r2) }, "replica-2"))
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

// TestHAMoveFromSQLite moves a running fleet from a SQLite hub to two replicas on PostgreSQL:
// stop the hub, copy its store (flotilla hub copy-store), start the first replica on the old
// data dir and address and a second one beside it. The agent, untouched, carries on: its
// certificate is still valid, a new commit rolls out, and every report it produced, before and
// after the move, is ingested exactly once.
func TestHAMoveFromSQLite(t *testing.T) {
	// Not in parallel: it kills hub processes and replicas and waits on their recovery
	// within fixed bounds, which other fleets on the two cores made it miss (seen in CI).
	repoDir, root := t.TempDir(), t.TempDir()
	rp := newRepo(t, repoDir, faultFleet("file://"+repoDir, 5, "10m"))
	clusters := clustertest.StartAll(t, "a")

	old := &hubReplica{id: "sqlite-hub", dir: filepath.Join(root, "hub"), agentAddr: freeAddr(t), apiAddr: freeAddr(t)}
	old.start(t, root, "", "file://"+repoDir)
	f := &procFleet{
		t: t, dir: root, hub: old.proc, client: old.client,
		clusters: clusters, agents: map[string]*proc{},
		produced: map[string]int64{}, lost: map[string]int64{}, firstSeq: map[string]uint64{"a": 1},
	}
	var replicas []*hubReplica
	t.Cleanup(func() {
		for _, a := range f.agents {
			a.stop()
		}
		for _, r := range append(replicas, old) {
			r.proc.stop()
		}
	})
	j, err := old.client.AddCluster(t.Context(), "a", map[string]string{"env": "prod"})
	if err != nil {
		t.Fatal(err)
	}
	f.agents["a"] = startProc(t, filepath.Join(root, "agent-a.log"), "agent",
		"--hub", old.agentURL(), "--join-token", j.JoinToken,
		"--kubeconfig", clusters["a"].KubeconfigPath(), "--state-dir", f.stateDir("a"),
		"--heartbeat-interval", "1s", "--report-interval", "200ms", "--log-level", "debug")
	f.waitStatus("convergence on SQLite", 2*time.Minute, everyWebReady("", 1))
	before, err := old.client.Cluster(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}

	old.proc.stop()
	dsn := pgtest.NewDatabase(t)
	out, err := exec.Command(flotilla(t), "hub", "copy-store", "--data-dir", old.dir, "--to", dsn, "-o", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("flotilla hub copy-store: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"clusters": 1`) {
		t.Errorf("copy-store output does not say it copied one cluster:\n%s", out)
	}

	// The first replica takes the old hub's place: data dir (its CA) and addresses.
	r1 := &hubReplica{id: "replica-1", dir: old.dir, agentAddr: old.agentAddr, apiAddr: old.apiAddr}
	r1.start(t, root, dsn, "file://"+repoDir)
	r2 := startReplica(t, root, "replica-2", dsn, "file://"+repoDir)
	replicas = append(replicas, r1, r2)
	f.hub, f.client = r2.proc, r2.client

	after, err := r2.client.Cluster(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if after.ReportsIngested < before.ReportsIngested {
		t.Errorf("reports ingested: %d on SQLite, %d on PostgreSQL after the copy", before.ReportsIngested, after.ReportsIngested)
	}
	commit := rp.commit("v2", map[string]string{"apps/web/configs.yaml": configMaps(5, "v2")})
	f.waitStatus("a commit after the move rolls out", 2*time.Minute, everyWebReady(commit, 1))
	if v, ok := configMapData(t, clusters["a"], "web", "cfg-0000", "version"); !ok || v != "v2" {
		t.Errorf("cfg-0000 version = %q (found %v), want v2", v, ok)
	}
	f.checkReports()
}

// secretsKeyFile writes the key that every replica of a test shares (--secrets-key-file) into
// root, once, and returns its path: replicas seal the CA key and admin token in the store with
// it.
func secretsKeyFile(t *testing.T, root string) string {
	t.Helper()
	path := filepath.Join(root, "secrets.key")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.WriteFile(path, []byte(strings.Repeat("5e", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
