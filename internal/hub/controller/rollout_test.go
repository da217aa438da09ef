package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/rollout"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
)

const rolloutFleetYAML = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: https://git.example.com/platform.git, branch: main}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: platform
  path: web
  targets: [{selector: {}}]
  rollout:
    waves:
      - {name: canary, selector: {matchLabels: {ring: canary}}, bake: 5m}
      - {name: rest}
`

func rolloutArtifact(n int) schedule.Artifact {
	return schedule.Artifact{Source: "platform", URL: "https://git.example.com/platform.git",
		Revision: fmt.Sprintf("main@sha1:%040d", n), Digest: "sha256:" + fmt.Sprintf("%064d", n)}
}

// rolloutHarness is a controller over the fake store with a fleet whose release web rolls
// out canary first; c1 is the canary, c2 and c3 the rest, all running revision 1.
type rolloutHarness struct {
	t      *testing.T
	st     *fakeStore
	c      *Controller
	clk    *clock.Fake
	mu     sync.Mutex
	audit  []audit.Event
	events []phase.RolloutEvent
}

func newRolloutHarness(t *testing.T, s Store, extraYAML ...string) *rolloutHarness {
	h := &rolloutHarness{t: t, clk: clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))}
	fs, _ := s.(*fakeStore)
	if fs == nil {
		fs = s.(interface{ fake() *fakeStore }).fake()
	}
	h.st = fs
	fs.clusters = []store.Cluster{
		{Name: "c1", Labels: map[string]string{"ring": "canary"}, LastSeen: h.clk.Now()},
		{Name: "c2", LastSeen: h.clk.Now()},
		{Name: "c3", LastSeen: h.clk.Now()},
	}
	fs.docs = map[string]store.DesiredState{}
	fs.fail = map[string]int{}
	for _, cl := range fs.clusters {
		a := desired.Assignment{Release: "web", Source: "platform", URL: rolloutArtifact(1).URL, Revision: rolloutArtifact(1).Revision,
			Digest: rolloutArtifact(1).Digest, Path: "web"}
		doc, err := desired.Encode(desired.Document{Assignments: []desired.Assignment{a}})
		if err != nil {
			t.Fatal(err)
		}
		fs.docs[cl.Name] = store.DesiredState{Cluster: cl.Name, Generation: 1, Document: doc}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(rolloutFleetYAML+strings.Join(extraYAML, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	arts, err := artifact.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h.c, err = New(Deps{Store: s, Poller: downPoller{}, Artifacts: arts, Lease: heldLease{}, Clock: h.clk, LastSeen: h.lastSeen,
		Record: func(_ context.Context, e audit.Event) { h.mu.Lock(); h.audit = append(h.audit, e); h.mu.Unlock() },
		RolloutEvent: func(_ string, e phase.RolloutEvent) {
			h.mu.Lock()
			h.events = append(h.events, e)
			h.mu.Unlock()
		},
	}, Options{Fleet: dir, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !h.c.loadFleet(t.Context()) {
		t.Fatal("the fleet did not load")
	}
	return h
}

// lastSeen: every agent was heard from just now (they report and beat steadily).
func (h *rolloutHarness) lastSeen(store.Cluster) time.Time { return h.clk.Now() }

// newest makes revision n the source's newest artifact and reschedules.
func (h *rolloutHarness) newest(n int) {
	h.c.mu.Lock()
	h.c.artifacts["platform"] = rolloutArtifact(n)
	h.c.mu.Unlock()
	h.c.reschedule(h.t.Context())
}

// assigned returns the revision number cluster's stored document assigns web, and its
// rollout line.
func (h *rolloutHarness) assigned(cluster string) (int, string) {
	h.t.Helper()
	doc, _ := h.st.doc(h.t, cluster)
	for _, a := range doc.Assignments {
		if a.Release == "web" {
			var n int
			if _, err := fmt.Sscanf(strings.TrimPrefix(a.Revision, "main@sha1:"), "%d", &n); err != nil {
				h.t.Fatalf("%s: revision %s: %v", cluster, a.Revision, err)
			}
			if a.Digest != rolloutArtifact(n).Digest {
				h.t.Fatalf("%s: revision %s with digest %s", cluster, a.Revision, a.Digest)
			}
			return n, a.Rollout
		}
	}
	return 0, ""
}

func (h *rolloutHarness) want(cluster string, rev int, line string) {
	h.t.Helper()
	got, gotLine := h.assigned(cluster)
	if got != rev || !strings.Contains(gotLine, line) || (line == "" && gotLine != "") {
		h.t.Errorf("%s: revision %d (%q), want %d (%q)", cluster, got, gotLine, rev, line)
	}
}

func (h *rolloutHarness) report(cluster string, rev int, phase string) {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	a := rolloutArtifact(rev)
	for i, s := range h.st.statuses {
		if s.Cluster == cluster && s.Release == "web" {
			h.st.statuses = append(h.st.statuses[:i], h.st.statuses[i+1:]...)
			break
		}
	}
	h.st.statuses = append(h.st.statuses, store.AssignmentStatus{Cluster: cluster, Release: "web", Revision: a.Revision,
		Digest: a.Digest, Phase: phase, ReportedAt: h.clk.Now()})
}

func (h *rolloutHarness) state() (rollout.State, int64) {
	h.t.Helper()
	rec, err := h.st.GetRecord(h.t.Context(), rollout.RecordKind, "web")
	if err != nil {
		h.t.Fatal(err)
	}
	var st rollout.State
	if err := json.Unmarshal(rec.Data, &st); err != nil {
		h.t.Fatal(err)
	}
	return st, rec.Version
}

// The controller moves a release's rollout through its waves: the canary first, the rest
// once the canary baked, with each step stored, audited and announced, and a due time
// that ends the bake on the controller's clock.
func TestRolloutMovesThroughWaves(t *testing.T) {
	t.Parallel()
	h := newRolloutHarness(t, &fakeStore{})
	h.newest(2)
	h.want("c1", 2, "")
	h.want("c2", 1, "wave rest waits for canary")
	h.want("c3", 1, "wave rest waits for canary")
	if !h.c.rolloutKeep[rolloutArtifact(1).Digest] {
		t.Error("the stable artifact (revision 1) is not kept from garbage collection")
	}

	h.report("c1", 2, "Ready")
	h.clk.Advance(time.Second)
	h.c.reschedule(t.Context())
	h.want("c2", 1, "wave rest waits for canary")
	if due := h.c.rolloutDue.Sub(h.clk.Now()); due <= 0 || due > 5*time.Minute {
		t.Errorf("next step due in %s, want within the 5m bake", due)
	}
	h.clk.Advance(5 * time.Minute)
	h.c.reschedule(t.Context())
	h.want("c2", 2, "")
	h.want("c3", 2, "")

	h.report("c2", 2, "Ready")
	h.report("c3", 2, "Ready")
	h.c.reschedule(t.Context())
	st, _ := h.state()
	if st.Phase != rollout.PhaseCompleted || st.Stable.Digest != rolloutArtifact(2).Digest {
		t.Errorf("rollout %s with stable %s, want Completed at revision 2", st.Phase, st.Stable.Revision)
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		if cs := st.Clusters[c]; cs == nil || cs.Phase != rollout.ClusterDone {
			t.Errorf("%s: %+v, want Done (reported Ready, not passed over)", c, cs)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var types []string
	for _, e := range h.events {
		types = append(types, e.Type)
	}
	if got, want := strings.Join(types, " "), "started wave-started wave-done wave-started wave-done completed"; got != want {
		t.Errorf("events announced: %s, want %s", got, want)
	}
	actions := map[string]bool{}
	for _, e := range h.audit {
		if !strings.HasPrefix(e.Action, "rollout.") {
			continue
		}
		actions[e.Action] = true
		if e.Release != "web" || e.Actor != "hub" {
			t.Errorf("audit record %+v: want release web by hub", e)
		}
	}
	for _, a := range []string{"rollout.started", "rollout.wave-started", "rollout.wave-done", "rollout.completed"} {
		if !actions[a] {
			t.Errorf("no audit record %s among %v", a, actions)
		}
	}
}

// A user's action written between the controller's read and its write (from another
// replica) is not lost: the controller's compare-and-swap fails, and it steps again from the
// stored record.
func TestRolloutActionIsNotLostToAConcurrentStep(t *testing.T) {
	t.Parallel()
	racing := &racingStore{fakeStore: &fakeStore{}}
	h := newRolloutHarness(t, racing)
	h.newest(2)
	st, version := h.state()
	if _, err := rollout.Act(&st, rollout.ActionPause, "", "token:alice", h.clk.Now()); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(&st)
	// The record changes under the controller: a stale read is simulated by a racing
	// store that writes the pause right before the controller's own write.
	racing.before = func() {
		if _, err := h.st.PutRecord(t.Context(), store.Record{Kind: rollout.RecordKind, Key: "web", Data: data}, version); err != nil {
			t.Error(err)
		}
	}
	h.report("c1", 2, "Ready")
	h.clk.Advance(10 * time.Minute)
	h.c.reschedule(t.Context())
	got, _ := h.state()
	if !got.Paused {
		t.Fatal("the pause written concurrently was lost")
	}
	if racing.conflicts == 0 {
		t.Fatal("no write conflicted: the test did not race")
	}
	h.want("c2", 1, "paused")
}

// racingStore runs before once, right before the first PutRecord.
type racingStore struct {
	*fakeStore
	before    func()
	conflicts int
}

func (s *racingStore) fake() *fakeStore { return s.fakeStore }

func (s *racingStore) PutRecord(ctx context.Context, r store.Record, expect int64) (int64, error) {
	if s.before != nil {
		s.before()
		s.before = nil
	}
	v, err := s.fakeStore.PutRecord(ctx, r, expect)
	if err != nil {
		s.conflicts++
	}
	return v, err
}

// When the agents' reports cannot be read, the rollout does not move and no cluster's
// artifact changes.
func TestRolloutHoldsWhenStatusesCannotBeRead(t *testing.T) {
	t.Parallel()
	fs := &fakeStore{}
	h := newRolloutHarness(t, &statusFailStore{fakeStore: fs})
	h.newest(2)
	for _, c := range []string{"c1", "c2", "c3"} {
		h.want(c, 1, "held")
	}
	if _, err := fs.GetRecord(t.Context(), rollout.RecordKind, "web"); err == nil {
		t.Error("a rollout state was stored from a step that could not read the reports")
	}
}

type statusFailStore struct{ *fakeStore }

func (s *statusFailStore) fake() *fakeStore { return s.fakeStore }
func (s *statusFailStore) ListStatuses(context.Context) ([]store.AssignmentStatus, error) {
	return nil, errInjected
}

// A release whose rollout is taken out of the fleet goes back to today's behaviour: every
// cluster gets the newest artifact, and the rollout's record is deleted.
func TestReleaseWithoutRolloutIsScheduledAsBefore(t *testing.T) {
	t.Parallel()
	h := newRolloutHarness(t, &fakeStore{})
	h.newest(2)
	h.want("c2", 1, "waits")
	h.c.mu.Lock()
	h.c.fleet.Releases[0].Spec.Rollout = nil
	h.c.merged = nil
	h.c.mu.Unlock()
	h.newest(3)
	for _, c := range []string{"c1", "c2", "c3"} {
		h.want(c, 3, "")
	}
	if _, err := h.st.GetRecord(t.Context(), rollout.RecordKind, "web"); err == nil {
		t.Error("the rollout record of a release without a rollout was kept")
	}
}

// A deleted release with a rollout leaves its clusters along the rollout's waves: the
// canary gets its tombstone first, the rest keep the release until the canary's bake has
// passed, and then the record goes.
func TestDeletedReleaseLeavesAlongItsWaves(t *testing.T) {
	t.Parallel()
	h := newRolloutHarness(t, &fakeStore{})
	h.newest(1) // every cluster already runs revision 1: the rollout is complete at once
	if st, _ := h.state(); st.Phase != rollout.PhaseCompleted {
		t.Fatalf("rollout %s, want Completed", st.Phase)
	}
	h.c.mu.Lock()
	h.c.fleet.Releases = nil
	h.c.merged = nil
	h.c.mu.Unlock()
	h.c.reschedule(t.Context())
	h.want("c1", 0, "")
	h.want("c2", 1, "removal waits for wave rest")
	h.want("c3", 1, "removal waits for wave rest")
	doc, _ := h.st.doc(t, "c1")
	if len(doc.Removed) != 1 || doc.Removed[0].Release != "web" || doc.Removed[0].Reason != desired.ReasonReleaseDeleted {
		t.Errorf("c1's tombstones %+v, want web's", doc.Removed)
	}
	if doc, _ := h.st.doc(t, "c2"); len(doc.Removed) != 0 {
		t.Errorf("c2 got tombstones %+v before its wave", doc.Removed)
	}

	h.clk.Advance(5 * time.Minute)
	h.c.reschedule(t.Context())
	h.want("c2", 0, "")
	h.want("c3", 0, "")
	h.c.reschedule(t.Context())
	if _, err := h.st.GetRecord(t.Context(), rollout.RecordKind, "web"); err == nil {
		t.Error("the record of a release removed from every cluster was kept")
	}
	removed := 0
	for _, e := range h.audit {
		if e.Action == "assignment.removed" && e.Release == "web" {
			removed++
		}
	}
	if removed != 3 {
		t.Errorf("%d removals audited, want 3", removed)
	}
}

// A controller that takes over (a restarted hub, another replica) goes on with the rollout
// from its record: the canary's bake is not started again, and what was announced is not
// announced again.
func TestRolloutContinuesAfterTakeover(t *testing.T) {
	t.Parallel()
	h := newRolloutHarness(t, &fakeStore{})
	h.newest(2)
	h.report("c1", 2, "Ready")
	h.clk.Advance(time.Second)
	h.c.reschedule(t.Context()) // the canary bakes from now

	var announced []string
	next, err := New(Deps{Store: h.st, Poller: downPoller{}, Artifacts: h.c.d.Artifacts, Lease: heldLease{}, Clock: h.clk, LastSeen: h.lastSeen,
		RolloutEvent: func(_ string, e phase.RolloutEvent) { announced = append(announced, e.Type) },
	}, h.c.opts)
	if err != nil {
		t.Fatal(err)
	}
	if !next.loadFleet(t.Context()) {
		t.Fatal("the fleet did not load")
	}
	h.clk.Advance(5 * time.Minute)
	next.mu.Lock()
	next.artifacts["platform"] = rolloutArtifact(2)
	next.mu.Unlock()
	next.reschedule(t.Context())
	h.want("c2", 2, "")
	if got := strings.Join(announced, " "); got != "wave-done wave-started" {
		t.Errorf("the new controller announced %q, want only what happened since: wave-done wave-started", got)
	}
}

// A wave waits for its clusters' windows: the canary, inside a deny window, is not started
// (and neither is the next wave), and the rollout is due again when the window closes.
func TestRolloutWaitsForAWindow(t *testing.T) {
	t.Parallel()
	h := newRolloutHarness(t, &fakeStore{}, `---
apiVersion: flotilla.dev/v1alpha1
kind: Window
metadata: {name: office-hours}
spec:
  type: deny
  schedule: "0 9 * * *"
  duration: 9h
  clusterSelector: {matchLabels: {ring: canary}}
`)
	h.newest(2) // at 12:00 UTC: the window is open until 18:00
	h.want("c1", 1, `office-hours`)
	h.want("c2", 1, "wave rest waits for canary")
	if want := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC); !h.c.rolloutDue.Equal(want) {
		t.Errorf("rollouts due at %s, want when the window closes, %s", h.c.rolloutDue, want)
	}
	if v := rollout.View("web", nil, func() *rollout.State { st, _ := h.state(); return &st }()); v.Waves[0].Phase != rollout.WaveWaitingWindow {
		t.Errorf("wave canary is %s, want %s", v.Waves[0].Phase, rollout.WaveWaitingWindow)
	}
	h.clk.Advance(6 * time.Hour)
	h.c.reschedule(t.Context())
	h.want("c1", 2, "")
	h.want("c2", 1, "wave rest waits for canary")
}

// relabel changes cluster's labels in the store, as the user API does, and tells the
// controller who did it.
func (h *rolloutHarness) relabel(cluster, actor string, labels map[string]string) {
	h.st.mu.Lock()
	for i := range h.st.clusters {
		if h.st.clusters[i].Name == cluster {
			h.st.clusters[i].Labels = labels
		}
	}
	h.st.mu.Unlock()
	h.c.Relabelled(cluster, actor)
}

// targetProd makes web select the clusters labelled env=prod, which every cluster is.
func (h *rolloutHarness) targetProd() {
	h.c.mu.Lock()
	h.c.fleet.Releases[0].Spec.Targets = []v1alpha1.Target{{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}
	h.c.merged = nil
	h.c.mu.Unlock()
	h.st.mu.Lock()
	h.st.clusters[0].Labels = map[string]string{"ring": "canary", "env": "prod"}
	h.st.clusters[1].Labels = map[string]string{"env": "prod"}
	h.st.clusters[2].Labels = map[string]string{"env": "prod"}
	h.st.mu.Unlock()
}

// removedBy returns who the audit trail says removed web from cluster, "" when nobody yet.
func (h *rolloutHarness) removedBy(cluster string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var by []string
	for _, e := range h.audit {
		if e.Action == "assignment.removed" && e.Release == "web" && e.Cluster == cluster {
			by = append(by, e.Actor)
		}
	}
	return by
}

// Clusters relabelled out of a release with a rollout leave it along the waves: the canary
// at once, the rest only once the canary's removal has baked, each tombstone (and its
// audit record) naming who relabelled the cluster, even when it goes out reschedules later.
func TestRelabelledClustersLeaveAlongTheWaves(t *testing.T) {
	t.Parallel()
	h := newRolloutHarness(t, &fakeStore{})
	h.targetProd()
	h.newest(1) // every cluster already runs revision 1: the rollout is complete at once

	// Both leave in one reschedule; c1 loses every label but leaves in the wave it was in.
	h.relabel("c1", "user:alice", map[string]string{})
	h.relabel("c2", "user:bob", map[string]string{"env": "staging"})
	h.c.reschedule(t.Context())
	h.want("c1", 0, "")
	h.want("c2", 1, "no longer selected: removal waits for wave rest")
	h.want("c3", 1, "")
	doc, _ := h.st.doc(t, "c1")
	if len(doc.Removed) != 1 || doc.Removed[0].Reason != desired.ReasonNotSelected || doc.Removed[0].Actor != "user:alice" {
		t.Errorf("c1's tombstones %+v, want web's, not selected, by user:alice", doc.Removed)
	}
	if doc, _ := h.st.doc(t, "c2"); len(doc.Removed) != 0 {
		t.Errorf("c2 got tombstones %+v before the canary's removal baked", doc.Removed)
	}
	if by := h.removedBy("c1"); len(by) != 1 || by[0] != "user:alice" {
		t.Errorf("c1's removal audited by %q, want user:alice", by)
	}
	if by := h.removedBy("c2"); len(by) != 0 {
		t.Errorf("c2's removal audited (by %q) before it happened", by)
	}
	if due := h.c.rolloutDue.Sub(h.clk.Now()); due != 5*time.Minute {
		t.Errorf("rollouts due in %s, want when the canary's removal has baked (5m)", due)
	}

	h.clk.Advance(4 * time.Minute)
	h.c.reschedule(t.Context())
	h.want("c2", 1, "no longer selected")
	h.clk.Advance(time.Minute)
	h.c.reschedule(t.Context())
	h.want("c2", 0, "")
	h.want("c3", 1, "")
	doc, _ = h.st.doc(t, "c2")
	if len(doc.Removed) != 1 || doc.Removed[0].Reason != desired.ReasonNotSelected || doc.Removed[0].Actor != "user:bob" {
		t.Errorf("c2's tombstones %+v, want web's, not selected, by user:bob", doc.Removed)
	}
	if by := h.removedBy("c2"); len(by) != 1 || by[0] != "user:bob" {
		t.Errorf("c2's removal audited by %q, want user:bob", by)
	}
	if st, _ := h.state(); st.Leaving != nil || st.Phase != rollout.PhaseCompleted {
		t.Errorf("rollout %s with removal %+v, want Completed with no removal under way", st.Phase, st.Leaving)
	}
	var types []string
	h.mu.Lock()
	for _, e := range h.audit {
		if strings.HasPrefix(e.Action, "rollout.") {
			types = append(types, e.Action+":"+fmt.Sprint(e.Detail["wave"]))
		}
	}
	h.mu.Unlock()
	want := "rollout.started:<nil> rollout.wave-started:canary rollout.wave-done:canary rollout.wave-started:rest rollout.wave-done:rest rollout.completed:<nil>"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("audited rollout events %q, want %q", got, want)
	}
}

// flakyStatusStore fails to list the assignment statuses while fail is set.
type flakyStatusStore struct {
	*fakeStore
	fail atomic.Bool
}

func (s *flakyStatusStore) fake() *fakeStore { return s.fakeStore }
func (s *flakyStatusStore) ListStatuses(ctx context.Context) ([]store.AssignmentStatus, error) {
	if s.fail.Load() {
		return nil, errInjected
	}
	return s.fakeStore.ListStatuses(ctx)
}

// A relabelled cluster keeps a release with a rollout while the rollout cannot be stepped
// (its inputs cannot be read): its removal waits, as a revision would, and goes out, by the
// relabel's actor, at the first step that can read them.
func TestRelabelledClusterKeepsTheReleaseWhileRolloutsCannotStep(t *testing.T) {
	t.Parallel()
	fs := &flakyStatusStore{fakeStore: &fakeStore{}}
	h := newRolloutHarness(t, fs)
	h.targetProd()
	h.newest(1)
	fs.fail.Store(true)
	h.relabel("c1", "user:alice", map[string]string{"ring": "canary"})
	h.c.reschedule(t.Context())
	h.want("c1", 1, "removal held")
	if doc, _ := h.st.doc(t, "c1"); len(doc.Removed) != 0 {
		t.Errorf("c1 got tombstones %+v from a step that could not read the reports", doc.Removed)
	}
	fs.fail.Store(false)
	h.c.reschedule(t.Context())
	h.want("c1", 0, "")
	if by := h.removedBy("c1"); len(by) != 1 || by[0] != "user:alice" {
		t.Errorf("c1's removal audited by %q, want user:alice", by)
	}
}

// The actor of a relabel whose removal waits for its wave is kept in the rollout's record: a
// controller that takes over (a restarted hub, another replica) still names them when the
// tombstone goes out.
func TestRelabelActorSurvivesTakeover(t *testing.T) {
	t.Parallel()
	h := newRolloutHarness(t, &fakeStore{})
	h.targetProd()
	h.newest(1)
	h.relabel("c1", "user:alice", map[string]string{"ring": "canary"})
	h.relabel("c2", "user:bob", map[string]string{})
	h.c.reschedule(t.Context())
	h.want("c2", 1, "removal waits for wave rest")

	next, err := New(Deps{Store: h.st, Poller: downPoller{}, Artifacts: h.c.d.Artifacts, Lease: heldLease{}, Clock: h.clk, LastSeen: h.lastSeen,
		Record: func(_ context.Context, e audit.Event) { h.mu.Lock(); h.audit = append(h.audit, e); h.mu.Unlock() },
	}, h.c.opts)
	if err != nil {
		t.Fatal(err)
	}
	if !next.loadFleet(t.Context()) {
		t.Fatal("the fleet did not load")
	}
	next.mu.Lock()
	next.fleet.Releases[0].Spec.Targets = h.c.fleet.Releases[0].Spec.Targets
	next.merged = nil
	next.artifacts["platform"] = rolloutArtifact(1)
	next.mu.Unlock()
	h.clk.Advance(5 * time.Minute)
	next.reschedule(t.Context())
	h.want("c2", 0, "")
	if doc, _ := h.st.doc(t, "c2"); len(doc.Removed) != 1 || doc.Removed[0].Actor != "user:bob" {
		t.Errorf("c2's tombstones %+v after a takeover, want web's by user:bob", doc.Removed)
	}
	if by := h.removedBy("c2"); len(by) != 1 || by[0] != "user:bob" {
		t.Errorf("c2's removal audited by %q after a takeover, want user:bob", by)
	}
}
