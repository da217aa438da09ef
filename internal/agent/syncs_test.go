package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flotilla/flotilla/internal/desired"
)

func TestSyncRequests(t *testing.T) {
	t.Parallel()
	r := newLoopRig(t, noon)
	av, bv := r.version("a", "v1"), r.version("b", "v1")
	ds := func(gen int64, syncs ...desired.SyncRequest) desired.State {
		d := desiredAt(gen, nil, app("a", "main@1", av), app("b", "main@1", bv))
		d.Syncs = syncs
		return d
	}
	r.a.setDesired(ds(1))
	applied := []string{"a@v1 prune=true selfHeal=true", "b@v1 prune=true selfHeal=true"}
	r.idle("applied", applied...)

	a1, b1 := "a@v1 prune=true selfHeal=true", "b@v1 prune=true selfHeal=true"

	// A sync for a: a's status says which request it answers (a new generation reconciles
	// every release anyway).
	r.a.setDesired(ds(2, desired.SyncRequest{ID: "s1", Release: "a", Actor: "token:admin"}))
	applied = append(applied, a1, b1)
	r.idle("synced a", applied...)
	r.expect("a", wantStatus{phase: "Ready", revision: "main@1", syncID: "s1"})
	r.expect("b", wantStatus{phase: "Ready", revision: "main@1"})

	// The same request again (the hub sends it until it sees the report): not answered
	// twice, not even after a restart.
	r.a.setDesired(ds(3, desired.SyncRequest{ID: "s1", Release: "a"}))
	applied = append(applied, a1, b1)
	r.idle("s1 not again", applied...)
	r.restart()
	applied = append(applied, a1, b1)
	r.idle("s1 not again after a restart", applied...)

	// Within one generation, long before the interval: a sync request alone makes its
	// release reconcile now.
	r.a.setDesired(ds(3, desired.SyncRequest{ID: "s1", Release: "a"}, desired.SyncRequest{ID: "now", Release: "b"}))
	applied = append(applied, b1)
	r.idle("b synced within a generation", applied...)
	r.expect("b", wantStatus{phase: "Ready", revision: "main@1", syncID: "now"})

	// Two requests for a: two reconciles, each with its id. A request for an unknown release
	// is ignored. A request for every release reaches both, in a pass of its own.
	r.a.setDesired(ds(4,
		desired.SyncRequest{ID: "s2", Release: "a"}, desired.SyncRequest{ID: "s3", Release: "a"},
		desired.SyncRequest{ID: "s4", Release: "gone"}, desired.SyncRequest{ID: "s5"}))
	applied = append(applied, a1, b1, a1, a1, b1)
	r.idle("s2, s3 and s5", applied...)
	var ids []string
	for _, st := range r.statuses("a") {
		ids = append(ids, st.SyncId)
	}
	if want := []string{"", "s1", "", "", "s2", "s3", "s5"}; !slices.Equal(ids, want) {
		t.Errorf("sync ids in a's statuses %q, want %q", ids, want)
	}
	r.expect("b", wantStatus{phase: "Ready", revision: "main@1", syncID: "s5"})
	for _, id := range []string{"s1", "now", "s2", "s3", "s4", "s5"} {
		if !r.a.st.syncHandled(id) {
			t.Errorf("sync %s not remembered as handled", id)
		}
	}
}

func TestHandledSyncsAreBounded(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	st, err := openState(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range maxHandledSyncs + 5 {
		ids = append(ids, fmt.Sprint("id-", i))
	}
	if err := st.markSyncsHandled(ids); err != nil {
		t.Fatal(err)
	}
	st.close()
	if st, err = openState(dir); err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if st.syncHandled("id-4") || !st.syncHandled("id-5") || !st.syncHandled(fmt.Sprint("id-", maxHandledSyncs+4)) {
		t.Errorf("after %d ids: id-4 kept %t, id-5 kept %t; want the oldest 5 forgotten", len(ids), st.syncHandled("id-4"), st.syncHandled("id-5"))
	}
	if len(st.handled) != maxHandledSyncs {
		t.Errorf("%d ids remembered, want %d", len(st.handled), maxHandledSyncs)
	}
}

func TestSyncRequestBounds(t *testing.T) {
	t.Parallel()
	r := newLoopRig(t, noon)
	long := make([]byte, maxSyncID+1)
	for i := range long {
		long[i] = 'x'
	}
	ds := &desired.State{Document: desired.Document{Syncs: []desired.SyncRequest{{ID: string(long), Release: "a"}, {ID: "", Release: "a"}}}}
	if p := r.a.pendingSyncs(ds, nil); len(p) != 0 {
		t.Errorf("a long and an empty id were taken: %v", p)
	}
	ds.Syncs = nil
	for i := range maxSyncsPerState + 1 {
		ds.Syncs = append(ds.Syncs, desired.SyncRequest{ID: fmt.Sprint(i), Release: "gone"})
	}
	if p := r.a.pendingSyncs(ds, nil); len(p) != maxSyncsPerState {
		t.Errorf("%d requests looked at, want the first %d", len(p), maxSyncsPerState)
	}
}
