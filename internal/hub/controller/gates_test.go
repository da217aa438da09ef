package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/window"
	"github.com/flotilla/flotilla/internal/window/hold"
)

// gateStore is the fake store whose record reads can be made to fail.
type gateStore struct {
	*fakeStore
	failRecords bool
}

func (s *gateStore) ListRecords(ctx context.Context, kind string) ([]store.Record, error) {
	if s.failRecords {
		return nil, fmt.Errorf("list %s records: %w", kind, errInjected)
	}
	return s.fakeStore.ListRecords(ctx, kind)
}

const gatesFleetYAML = fleetYAML + `  suspend: true
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: platform
  path: web
  targets: [{selector: {}}]
---
apiVersion: flotilla.dev/v1alpha1
kind: Window
metadata: {name: business-hours}
spec:
  type: deny
  schedule: "0 9 * * 1-5"
  duration: 9h
  timeZone: Europe/Berlin
  releases: [baseline, "web-*"]
  clusterSelector: {matchLabels: {env: production}}
  blocks: [revisions, prune]
---
apiVersion: flotilla.dev/v1alpha1
kind: Window
metadata: {name: nights}
spec:
  type: allow
  schedule: "0 22 * * *"
  duration: 6h
---
apiVersion: flotilla.dev/v1alpha1
kind: Window
metadata: {name: staging-weekends}
spec:
  type: deny
  schedule: "0 0 * * 6"
  duration: 48h
  clusterSelector: {matchLabels: {env: staging}}
`

func putGateRecord(t *testing.T, st Store, kind, key string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRecord(t.Context(), store.Record{Kind: kind, Key: key, Data: data}, store.AnyVersion); err != nil {
		t.Fatal(err)
	}
}

// newGatesController is a controller over gatesFleetYAML with an artifact for the platform
// source, on c1 and c2 (production) and c3 (staging).
func newGatesController(t *testing.T, st *gateStore, clk clock.Clock) *Controller {
	t.Helper()
	st.clusters = append(st.clusters, store.Cluster{Name: "c3", Labels: map[string]string{"env": "staging"}})
	fleetDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(gatesFleetYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	arts, err := artifact.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Deps{Store: st, Poller: downPoller{}, Artifacts: arts, Lease: heldLease{}, Clock: clk}, Options{Fleet: fleetDir, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c.artifacts["platform"] = schedule.Artifact{Source: "platform", URL: "https://git.example.com/platform.git", Revision: "main@sha1:2222", Digest: fmt.Sprintf("sha256:%064d", 2)}
	if !c.loadFleet(t.Context()) || len(c.scheduled().Windows) != 3 {
		t.Fatalf("the fleet with windows did not load: %v", c.problems)
	}
	return c
}

// Each cluster's document carries the windows whose selector matches it, the freezes that
// cover it, its suspension and its suspended releases, with who and why; an unchanged set
// raises no generation; a failed read keeps the gates; an undecodable record holds.
func TestApplyGates(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) // a Tuesday, 13:00 in Berlin
	clk := clock.NewFake(now)
	st := &gateStore{fakeStore: restartedHub(t)}
	c := newGatesController(t, st, clk)
	putGateRecord(t, st, hold.RecordFreeze, "f-all", hold.Freeze{Reason: "incident 4711", Actor: "token:admin", Created: now})
	putGateRecord(t, st, hold.RecordFreeze, "f-web-staging", hold.Freeze{Release: "web", Selector: map[string]string{"env": "staging"}, Reason: "load test", Actor: "token:ops", Created: now})
	putGateRecord(t, st, hold.RecordSuspend, "c2", hold.Suspension{Reason: "node upgrade", Actor: "token:ops", Since: now})
	c.reschedule(t.Context())

	businessHours := window.Gate{Name: "business-hours", Kind: "window", Type: "deny", Schedule: "0 9 * * 1-5", Duration: 9 * time.Hour,
		TimeZone: "Europe/Berlin", Releases: []string{"baseline", "web-*"}, Blocks: []string{"revisions", "prune"}}
	nights := window.Gate{Name: "nights", Kind: "window", Type: "allow", Schedule: "0 22 * * *", Duration: 6 * time.Hour}
	weekends := window.Gate{Name: "staging-weekends", Kind: "window", Type: "deny", Schedule: "0 0 * * 6", Duration: 48 * time.Hour}
	freezeAll := window.Gate{Name: "f-all", Kind: "freeze", Type: "deny", Reason: "incident 4711", Actor: "token:admin"}
	freezeWeb := window.Gate{Name: "f-web-staging", Kind: "freeze", Type: "deny", Releases: []string{"web"}, Reason: "load test", Actor: "token:ops"}
	baselineSuspended := window.Gate{Name: "baseline", Kind: "suspend", Type: "deny", Releases: []string{"baseline"}}
	c2Suspended := window.Gate{Name: "c2", Kind: "suspend", Type: "deny", Reason: "node upgrade", Actor: "token:ops"}
	want := map[string][]window.Gate{
		"c1": {freezeAll, baselineSuspended, businessHours, nights},
		"c2": {freezeAll, baselineSuspended, c2Suspended, businessHours, nights},
		"c3": {freezeAll, freezeWeb, nights, weekends},
	}
	gens := map[string]int64{}
	check := func(when string) {
		t.Helper()
		for _, cl := range []string{"c1", "c2", "c3"} {
			doc, gen := st.doc(t, cl)
			if diff := cmp.Diff(want[cl], doc.Gates); diff != "" {
				t.Errorf("%s: %s's gates (-want +got):\n%s", when, cl, diff)
			}
			for _, g := range doc.Gates {
				if err := window.Check(g); err != nil {
					t.Errorf("%s: %s: a gate the agent refuses: %v", when, cl, err)
				}
			}
			gens[cl] = gen
		}
	}
	check("first reschedule")

	// What the agent's status line says, from the gates it holds.
	for _, tt := range []struct{ cluster, release, reason string }{
		{"c2", "baseline", `frozen by token:admin: incident 4711; release suspended; cluster suspended by token:ops: node upgrade; window "business-hours" closes 18:00 Europe/Berlin; window "nights" opens 22:00 UTC`},
		{"c3", "web", `frozen by token:admin: incident 4711; frozen by token:ops: load test; window "nights" opens 22:00 UTC`},
	} {
		doc, _ := st.doc(t, tt.cluster)
		if got := window.Evaluate(doc.Gates, tt.release, now).Reason; got != tt.reason {
			t.Errorf("%s on %s waits for %q, want %q", tt.release, tt.cluster, got, tt.reason)
		}
	}

	c.reschedule(t.Context())
	for _, cl := range []string{"c1", "c2", "c3"} {
		if _, gen := st.doc(t, cl); gen != gens[cl] {
			t.Errorf("%s: generation %d after a reschedule with the same gates, want %d", cl, gen, gens[cl])
		}
	}

	// Unfreeze: the freeze leaves every document at the next reschedule.
	if err := st.DeleteRecord(t.Context(), hold.RecordFreeze, "f-all", store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	c.reschedule(t.Context())
	want["c1"], want["c2"], want["c3"] = want["c1"][1:], want["c2"][1:], want["c3"][1:]
	check("after unfreeze")

	// The store cannot list records: the suspension lifted and the freeze set meanwhile are
	// not seen, and every cluster keeps the gates it had rather than opening.
	if err := st.DeleteRecord(t.Context(), hold.RecordSuspend, "c2", store.AnyVersion); err != nil {
		t.Fatal(err)
	}
	putGateRecord(t, st, hold.RecordFreeze, "f-new", hold.Freeze{Reason: "x", Actor: "token:admin", Created: now})
	st.failRecords = true
	select {
	case <-c.trigger:
	default:
	}
	c.reschedule(t.Context())
	check("a failed read of the records")
	// ...and the controller is woken to read them again after retryAfterFailure.
	eventually.Within(t, 10*time.Second, waiting(clk, "the retry timer"))
	if len(c.trigger) != 0 {
		t.Fatal("woken before the retry interval")
	}
	clk.Advance(retryAfterFailure)
	eventually.Within(t, 10*time.Second, triggered(c, "the retry wake"))

	st.failRecords = false
	c.reschedule(t.Context())
	freezeNew := window.Gate{Name: "f-new", Kind: "freeze", Type: "deny", Reason: "x", Actor: "token:admin"}
	want["c1"] = append([]window.Gate{freezeNew}, want["c1"]...)
	want["c2"] = []window.Gate{freezeNew, baselineSuspended, businessHours, nights}
	want["c3"] = append([]window.Gate{freezeNew}, want["c3"]...)
	check("the records read again")

	// A freeze record that does not decode freezes everything, and says so.
	st.mu.Lock()
	st.records[hold.RecordFreeze+"/f-bad"] = store.Record{Kind: hold.RecordFreeze, Key: "f-bad", Data: []byte(`{"reason": 7}`), Version: 1}
	st.records[hold.RecordSuspend+"/c3"] = store.Record{Kind: hold.RecordSuspend, Key: "c3", Data: []byte(`[`), Version: 1}
	st.mu.Unlock()
	c.reschedule(t.Context())
	doc, _ := st.doc(t, "c3")
	v := window.Evaluate(doc.Gates, "anything", now)
	if wantReason := `frozen: freeze record "f-bad" does not decode: json: cannot unmarshal number into Go struct field Freeze.reason of type string; frozen by token:admin: x; cluster suspended: suspension record does not decode: unexpected end of JSON input; window "nights" opens 22:00 UTC`; !v.Revisions || v.Reason != wantReason {
		t.Errorf("c3 with undecodable records: %+v, want revisions held with reason %q", v, wantReason)
	}
}

// Without windows, freezes or suspensions a document carries no gates, and its encoding is
// what it was before gates existed.
func TestNoGatesNoBytes(t *testing.T) {
	t.Parallel()
	st := restartedHub(t)
	c := newTestController(t, st, clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	c.loadFleet(t.Context())
	c.reschedule(t.Context())
	for _, cl := range []string{"c1", "c2"} {
		if ds := st.docs[cl]; json.Valid(ds.Document) && containsKey(t, ds.Document, "gates") {
			t.Errorf("%s: document %s has a gates field", cl, ds.Document)
		}
	}
}

func containsKey(t *testing.T, doc []byte, key string) bool {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	_, ok := m[key]
	return ok
}
