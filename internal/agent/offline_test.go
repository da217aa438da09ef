package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/internal/bundle"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// writeBundle writes a bundle of ds signed by the fake hub's CA, as `flotilla bundle export`
// does, and returns its path.
func (h *fakeHub) writeBundle(ds desired.State, ackedThrough uint64) string {
	h.t.Helper()
	path := filepath.Join(h.t.TempDir(), "b.bundle")
	f, err := os.Create(path)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	_, err = bundle.Write(h.t.Context(), f, bundle.WriteOptions{
		Desired: ds, CreatedAt: time.Now(), ReportsIngestedThrough: ackedThrough, CA: h.ca.Certificate(), Signer: h.ca.Signer(),
		Open: func(_ context.Context, digest string) (io.ReadCloser, int64, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			data := h.artifacts[digest]
			return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
		},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return path
}

func webState(cluster string, gen int64, digest string, removed ...string) desired.State {
	ds := desired.State{Cluster: cluster, Generation: gen, ExplicitRemovals: true}
	if digest != "" {
		ds.Assignments = []desired.Assignment{{Release: "web", Digest: digest, Path: "web", Namespace: "web", Interval: time.Minute, Vars: map[string]string{}}}
	}
	for _, r := range removed {
		ds.Removed = append(ds.Removed, desired.Tombstone{Release: r, Reason: "release-deleted"})
	}
	return ds
}

// TestImportStopped: with the agent stopped, `agent import` verifies the bundle against the
// pinned CA and stores its desired state and artifacts; it refuses a replay, a document that
// drops a release without a tombstone and another cluster's bundle, and drops from the outbox
// the reports the bundle says the hub has.
func TestImportStopped(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	dir := filepath.Join(t.TempDir(), "state")
	hub.identity(dir, "edge-off")
	digest := hub.addArtifact(map[string]string{"web/cm.yaml": configMap("web")})
	st, err := openState(dir)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := st.enqueue(&agentv1.Report{ProducedAt: timestamppb.Now(), Statuses: []*agentv1.AssignmentStatus{{Release: "web", Phase: "Ready"}}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	st.close()

	steps := []struct {
		name       string
		bundle     string
		wantStatus string
		want       string
		wantGen    int64
		dropped    int
	}{
		{"first bundle", hub.writeBundle(webState("edge-off", 5, digest), 0), ImportImported, "generation 5 of cluster \"edge-off\" imported", 5, 0},
		{"the same generation, with the hub's acknowledgement", hub.writeBundle(webState("edge-off", 5, digest), 2), ImportAlready, "already in force", 5, 2},
		{"an older generation", hub.writeBundle(webState("edge-off", 4, digest), 3), ImportRefused, "generation 4, older than the desired state this agent has (generation 5)", 5, 0},
		{"a document that drops web without a tombstone", hub.writeBundle(webState("edge-off", 6, ""), 0), ImportRefused, `drops release "web" without a tombstone`, 5, 0},
		{"another cluster's bundle", hub.writeBundle(webState("edge-other", 9, digest), 0), ImportRefused, `this agent is cluster "edge-off"`, 5, 0},
		{"web removed with its tombstone", hub.writeBundle(webState("edge-off", 7, "", "web"), 0), ImportImported, "generation 7", 7, 0},
	}
	for _, s := range steps {
		res, err := ImportBundle(t.Context(), dir, s.bundle, time.Second)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if res.Status != s.wantStatus || !strings.Contains(res.Message, s.want) || res.OutboxDropped != s.dropped {
			t.Errorf("%s: %+v; want %s with %q, %d reports dropped", s.name, res, s.wantStatus, s.want, s.dropped)
		}
		st, err := openState(dir)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := st.loadDesired()
		st.close()
		if err != nil || generationOf(ds) != s.wantGen {
			t.Fatalf("%s: the state dir holds generation %d (%v), want %d", s.name, generationOf(ds), err, s.wantGen)
		}
	}
	hex := strings.TrimPrefix(digest, "sha256:")
	if _, err := os.Stat(filepath.Join(dir, "artifacts", hex, "web", "cm.yaml")); err != nil {
		t.Errorf("the imported artifact is not unpacked in the cache: %v", err)
	}
	stats, err := ReadStats(dir)
	if err != nil || stats.Outbox != 1 {
		t.Errorf("outbox holds %d reports (%v), want 1: seqs 1 and 2 dropped, 3 kept", stats.Outbox, err)
	}
}

func TestImportNotJoined(t *testing.T) {
	t.Parallel()
	_, err := ImportBundle(t.Context(), t.TempDir(), "x.bundle", time.Second)
	if err == nil || !strings.Contains(err.Error(), "holds no agent identity") {
		t.Fatalf("error %v, want one saying the state dir holds no identity", err)
	}
}

// TestImportAndExportWhileRunning: a running agent takes a bundle from its state dir on its
// clock and reconciles it as a desired state from the hub, and writes its outbox on request,
// signed with its key.
func TestImportAndExportWhileRunning(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	target := &recordingTarget{}
	a, hub := newClockAgent(t, target, clk)
	hub.mu.Lock()
	hub.holdReports = true // reports stay in the outbox, as with no hub
	hub.mu.Unlock()
	digest := hub.addArtifact(map[string]string{"web/cm.yaml": configMap("web")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	defer func() { cancel(); <-done }()

	// tick moves the agent's clock until call returns: the agent polls its state dir on it.
	tick := func(call func()) {
		t.Helper()
		finished := make(chan struct{})
		go func() { defer close(finished); call() }()
		advanced := 0
		eventually.Within(t, 2*time.Minute, func() error {
			select {
			case <-finished:
				return nil
			default:
				clk.Advance(offlinePoll)
				advanced++
				return fmt.Errorf("the call has not returned after %d polls of the state dir", advanced)
			}
		})
	}
	var res ImportResult
	var err error
	tick(func() {
		res, err = ImportBundle(t.Context(), a.st.dir, hub.writeBundle(webState("edge-clock", 3, digest), 0), time.Minute)
	})
	if err != nil || res.Status != ImportImported || res.Generation != 3 {
		t.Fatalf("import while running: %+v (%v)", res, err)
	}
	eventually.Within(t, 10*time.Second, hub.holds("web reconciled from the bundle", func() bool { return target.count() >= 1 && a.st.outboxDepth() >= 1 }))

	tampered := hub.writeBundle(webState("edge-clock", 4, digest), 0)
	data, _ := os.ReadFile(tampered)
	data[bytes.LastIndex(data, []byte{0x1f, 0x8b})+20] ^= 1 // inside the artifact, past its gzip header
	if err := os.WriteFile(tampered, data, 0o600); err != nil {
		t.Fatal(err)
	}
	tick(func() { res, err = ImportBundle(t.Context(), a.st.dir, tampered, time.Minute) })
	if err != nil || res.Status != ImportRefused || !strings.Contains(res.Message, "digest mismatch") {
		t.Errorf("a tampered bundle while running: %+v (%v); want it refused", res, err)
	}

	var buf bytes.Buffer
	var exp ExportResult
	tick(func() { exp, err = ExportReports(t.Context(), a.st.dir, &buf, time.Minute, time.Now()) })
	if err != nil || exp.Reports == 0 || exp.Cluster != "edge-clock" {
		t.Fatalf("export while running: %+v (%v)", exp, err)
	}
	rf, err := bundle.ReadReports(&buf, bundle.ReportsLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := hub.ca.VerifyAgent([][]byte{rf.Certificate.Raw}, time.Now()); err != nil {
		t.Errorf("the reports file's certificate is not the agent's from this hub: %v", err)
	}
	if rf.Reports[len(rf.Reports)-1].Statuses[0].Release != "web" {
		t.Errorf("reports exported: %v", rf.Reports)
	}
}
