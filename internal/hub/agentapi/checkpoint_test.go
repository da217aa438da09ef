package agentapi

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pgtest"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// stores are the hub stores the audit tests run on: a SQLite file, and a PostgreSQL database
// of the server `make postgres` starts.
var stores = []struct {
	name string
	open func(t testing.TB) store.Store
}{
	{"sqlite", func(t testing.TB) store.Store {
		s, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "hub.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"postgres", func(t testing.TB) store.Store {
		s, err := store.OpenPostgres(t.Context(), pgtest.NewDatabase(t), store.PostgresOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

var auditT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// auditHub is the agent endpoint of a hub with a real store and audit log, a fake clock, and
// clusters (eu-1 unless told otherwise) each assigned the same releases (web unless told).
type auditHub struct {
	t     testing.TB
	store store.Store
	log   *audit.Log
	clock *clock.Fake
	agent *agentServer
	seq   map[string]uint64
}

func newAuditHub(t testing.TB, open func(t testing.TB) store.Store, every time.Duration) *auditHub {
	t.Helper()
	return newAuditFleet(t, open, every, []string{"eu-1"}, []string{"web"})
}

func newAuditFleet(t testing.TB, open func(t testing.TB) store.Store, every time.Duration, clusters, releases []string) *auditHub {
	t.Helper()
	h := &auditHub{t: t, store: open(t), clock: clock.NewFake(auditT0), seq: map[string]uint64{}}
	t.Cleanup(func() { h.store.Close() })
	var err error
	if h.log, err = audit.Open(t.Context(), filepath.Join(t.TempDir(), "audit.db")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.log.Close() })
	var doc desired.Document
	for _, r := range releases {
		doc.Assignments = append(doc.Assignments, desired.Assignment{Release: r, Source: "apps", URL: "https://git.example/apps.git", Vars: map[string]string{}})
	}
	for _, c := range clusters {
		if err := h.store.AddCluster(t.Context(), store.Cluster{Name: c, CreatedAt: auditT0}); err != nil {
			t.Fatal(err)
		}
		h.assignTo(c, doc)
	}
	record := func(ctx context.Context, e audit.Event) {
		// What the hub's record does: stamp the hub's time, append, never fail the caller.
		if e.Time.IsZero() {
			e.Time = h.clock.Now()
		}
		if _, err := h.log.Append(ctx, e); err != nil {
			t.Errorf("append %s: %v", e.Action, err)
		}
	}
	s := New(Deps{Store: h.store, Record: record, Metrics: NewMetrics(), Clock: h.clock}, Options{AuditCheckpoint: every})
	h.agent = &agentServer{s: s}
	return h
}

func (h *auditHub) assign(doc desired.Document) { h.assignTo("eu-1", doc) }

func (h *auditHub) assignTo(cluster string, doc desired.Document) {
	h.t.Helper()
	data, err := desired.Encode(doc)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, _, err := h.store.PutDesiredState(h.t.Context(), cluster, data); err != nil {
		h.t.Fatal(err)
	}
}

// report sends st as the next report of eu-1, produced now, and returns the records it
// appended.
func (h *auditHub) report(st *agentv1.AssignmentStatus) []audit.Record {
	h.t.Helper()
	before, _, err := h.log.Head(h.t.Context())
	if err != nil {
		h.t.Fatal(err)
	}
	h.send("eu-1", st)
	recs, err := h.log.List(h.t.Context(), audit.Filter{})
	if err != nil {
		h.t.Fatal(err)
	}
	return recs[before:]
}

// send sends st as cluster's next report, produced now.
func (h *auditHub) send(cluster string, st *agentv1.AssignmentStatus) {
	h.t.Helper()
	ctx := context.WithValue(h.t.Context(), clusterKey{}, cluster)
	h.seq[cluster]++
	seq := h.seq[cluster]
	req := &agentv1.ReportRequest{Reports: []*agentv1.Report{{Seq: seq, ProducedAt: timestamppb.New(h.clock.Now()), Statuses: []*agentv1.AssignmentStatus{st}}}}
	resp, err := h.agent.Report(ctx, connect.NewRequest(req))
	if err != nil {
		h.t.Fatalf("report %d of %s: %v", seq, cluster, err)
	}
	if got := resp.Msg.GetAcked(); len(got) != 1 || got[0] != seq {
		h.t.Fatalf("report %d of %s: acked %v", seq, cluster, got)
	}
}

// ready is web, unchanged, Ready at revision rev.
func ready(rev string) *agentv1.AssignmentStatus {
	return &agentv1.AssignmentStatus{Release: "web", Generation: 1, Revision: rev, Digest: "sha256:" + rev, Phase: "Ready", Health: "Current", Objects: 3}
}

// step is one report in a scenario: the clock moves by after, then the status goes in.
type step struct {
	after  time.Duration
	status *agentv1.AssignmentStatus
	// tombstone replaces web's assignment with its tombstone before the report.
	tombstone bool
	// want are the records the report appends: the action, then the detail fields named
	// (numbers as JSON reads them, times as RFC 3339).
	want []string
}

// summary is a record as a step's want names it: its action, then "k=v" for each key of a
// "k=..." word in want (a dotted key reads a nested map). JSON gives the values, strings
// bare.
func summary(rec audit.Record, want string) string {
	out := rec.Action
	for _, f := range strings.Fields(want) {
		k, _, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		var v any = rec.Detail
		for _, part := range strings.Split(k, ".") {
			m, _ := v.(map[string]any)
			v = m[part]
		}
		s := "<none>"
		if str, isStr := v.(string); isStr {
			s = str
		} else if v != nil {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		out += " " + k + "=" + s
	}
	return out
}

func TestAuditCheckpoints(t *testing.T) {
	t.Parallel()
	const every = time.Hour
	at := func(d time.Duration) string { return auditT0.Add(d).Format(time.RFC3339Nano) }
	changed := func(st *agentv1.AssignmentStatus, f func(*agentv1.AssignmentStatus)) *agentv1.AssignmentStatus {
		f(st)
		return st
	}
	tests := []struct {
		name  string
		every time.Duration
		steps []step
	}{{
		name: "unchanged checks make no record until the interval passes, then exactly one apply.verified",
		steps: []step{
			{0, ready("r1"), false, []string{"apply revision=r1 phase=Ready"}},
			{10 * time.Minute, ready("r1"), false, nil},
			{10 * time.Minute, ready("r1"), false, nil},
			{10 * time.Minute, ready("r1"), false, nil},
			{10 * time.Minute, ready("r1"), false, nil},
			{10 * time.Minute, ready("r1"), false, nil},
			{10 * time.Minute, ready("r1"), false, []string{fmt.Sprintf("apply.verified revision=r1 digest=sha256:r1 count=6 from=%s to=%s since=%s", at(10*time.Minute), at(time.Hour), at(0))}},
			{10 * time.Minute, ready("r1"), false, nil},
		},
	}, {
		name: "a change after a checkpoint is a full record",
		steps: []step{
			{0, ready("r1"), false, []string{"apply revision=r1"}},
			{time.Hour, ready("r1"), false, []string{"apply.verified count=1"}},
			{10 * time.Minute, changed(ready("r1"), func(st *agentv1.AssignmentStatus) { st.Configured = 1 }), false, []string{"apply revision=r1 configured=1 verified=<none>"}},
			{10 * time.Minute, ready("r1"), false, nil},
		},
	}, {
		name: "a new revision is a full record closing the open window",
		steps: []step{
			{0, ready("r1"), false, []string{"apply revision=r1"}},
			{10 * time.Minute, ready("r1"), false, nil},
			{10 * time.Minute, ready("r1"), false, nil},
			{10 * time.Minute, ready("r2"), false, []string{fmt.Sprintf(`apply revision=r2 verified={"count":2,"from":%q,"to":%q}`, at(10*time.Minute), at(20*time.Minute))}},
			{50 * time.Minute, ready("r2"), false, nil},
			{10 * time.Minute, ready("r2"), false, []string{"apply.verified revision=r2 count=2"}},
		},
	}, {
		name: "healed drift is a full record and a drift.healed record",
		steps: []step{
			{0, ready("r1"), false, []string{"apply"}},
			{10 * time.Minute, changed(ready("r1"), func(st *agentv1.AssignmentStatus) {
				st.Drifted = true
				st.Drift = []*agentv1.DriftedObject{{Object: "ConfigMap/web", Namespace: "web", Paths: []string{".data.a"}, Healed: true}}
			}), false, []string{"apply drifted=true", "drift.healed"}},
		},
	}, {
		name: "a failing assignment is recorded in full at every check",
		steps: []step{
			{0, changed(ready("r1"), func(st *agentv1.AssignmentStatus) { st.Phase, st.Error = "Failed", "ConfigMap/web apply failed" }), false, []string{"apply phase=Failed"}},
			{10 * time.Minute, changed(ready("r1"), func(st *agentv1.AssignmentStatus) { st.Phase, st.Error = "Failed", "ConfigMap/web apply failed" }), false, []string{"apply error=ConfigMap/web apply failed"}},
		},
	}, {
		name: "a removal is a full release.removed record and ends the checkpoint",
		steps: []step{
			{0, ready("r1"), false, []string{"apply"}},
			{10 * time.Minute, ready("r1"), false, nil},
			{10 * time.Minute, changed(ready("r1"), func(st *agentv1.AssignmentStatus) {
				st.Phase, st.Pruned, st.Objects, st.Health = string(hubclient.PhaseRemoved), 3, 0, ""
				st.Removal = &agentv1.Removal{Reason: desired.ReasonNotSelected, FleetRevision: "f2", Actor: "admin",
					PrunedObjects: []string{"configmap/web in web", "service/web in web", "deployment/web in web"}, KeptObjects: []string{"secret/keep in web"}}
			}), true,
				[]string{`release.removed revision=r1 pruned=3 reason=not-selected fleetRevision=f2 removedBy=admin prunedObjects=["configmap/web in web","service/web in web","deployment/web in web"] keptObjects=["secret/keep in web"] verified.count=1`}},
			// Assigned again: a first check, recorded in full.
			{10 * time.Minute, ready("r1"), false, []string{"apply revision=r1"}},
		},
	}, {
		name: "with checkpoints off every check is a full record", every: -1,
		steps: []step{
			{0, ready("r1"), false, []string{"apply"}},
			{10 * time.Minute, ready("r1"), false, []string{"apply"}},
			{time.Hour, ready("r1"), false, []string{"apply"}},
		},
	}}
	for _, db := range stores {
		t.Run(db.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					interval := tt.every
					if interval == 0 {
						interval = every
					}
					h := newAuditHub(t, db.open, interval)
					for i, s := range tt.steps {
						h.clock.Advance(s.after)
						if s.tombstone {
							h.assign(desired.Document{Removed: []desired.Tombstone{{Release: "web", Reason: desired.ReasonReleaseDeleted, FleetRevision: "f2"}}})
						} else if i > 0 && tt.steps[i-1].tombstone {
							h.assign(desired.Document{Assignments: []desired.Assignment{{Release: "web", Source: "apps", URL: "https://git.example/apps.git", Vars: map[string]string{}}}})
						}
						recs := h.report(s.status)
						got := make([]string, len(recs))
						for j, r := range recs {
							if j < len(s.want) {
								got[j] = summary(r, s.want[j])
							} else {
								got[j] = r.Action
							}
						}
						if diff := cmp.Diff(s.want, got, cmpopts.EquateEmpty()); diff != "" {
							t.Errorf("step %d (+%v, %s): records (-want +got):\n%s", i, s.after, s.status.GetPhase(), diff)
						}
					}
					if n, err := h.log.Verify(t.Context()); err != nil {
						t.Errorf("verify after %d records: %v", n, err)
					}
				})
			}
		})
	}
}
