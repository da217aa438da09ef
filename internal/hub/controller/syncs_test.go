package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/syncreq"
)

// syncStore is the fake store whose record reads can be made to fail.
type syncStore struct {
	*fakeStore
	failRecords bool
}

func (s *syncStore) ListRecords(ctx context.Context, kind string) ([]store.Record, error) {
	if s.failRecords {
		return nil, fmt.Errorf("list %s records: %w", kind, errInjected)
	}
	return s.fakeStore.ListRecords(ctx, kind)
}

func putSync(t *testing.T, st Store, r syncreq.Request) {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRecord(t.Context(), store.Record{Kind: syncreq.Kind, Key: r.ID, Data: data}, 0); err != nil {
		t.Fatal(err)
	}
}

func syncIDs(doc desired.Document) []string {
	var ids []string
	for _, s := range doc.Syncs {
		ids = append(ids, s.ID)
	}
	return ids
}

// Sync requests reach the documents of the clusters they concern, until each cluster's agent
// reports the id; a request every cluster reported, or that expired, is deleted; a failed
// read of the requests leaves every document's requests as they are.
func TestApplySyncs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	st := &syncStore{fakeStore: restartedHub(t)}
	st.clusters = append(st.clusters, store.Cluster{Name: "c3", Labels: map[string]string{"env": "staging"}})
	fleetDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleetYAML), 0o644); err != nil {
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
	c.loadFleet(t.Context())

	putSync(t, st, syncreq.Request{ID: "s-all", Release: "baseline", Actor: "token:ops", Created: now})
	putSync(t, st, syncreq.Request{ID: "s-c1-override", Release: "baseline", Cluster: "c1", Override: true, Reason: "hotfix", Actor: "token:ops", Created: now})
	putSync(t, st, syncreq.Request{ID: "s-every-release-c3", Cluster: "c3", Actor: "token:ops", Created: now})
	putSync(t, st, syncreq.Request{ID: "s-other-release", Release: "web", Actor: "token:ops", Created: now})
	putSync(t, st, syncreq.Request{ID: "s-old", Release: "baseline", Actor: "token:ops", Created: now.Add(-syncreq.TTL)})
	c.reschedule(t.Context())

	want := map[string][]string{"c1": {"s-all", "s-c1-override"}, "c2": {"s-all"}, "c3": {"s-every-release-c3"}}
	check := func(when string) {
		t.Helper()
		for _, cl := range []string{"c1", "c2", "c3"} {
			doc, _ := st.doc(t, cl)
			if diff := cmp.Diff(want[cl], syncIDs(doc)); diff != "" {
				t.Errorf("%s: %s's sync requests (-want +got):\n%s", when, cl, diff)
			}
		}
	}
	check("first reschedule")
	doc, _ := st.doc(t, "c1")
	if i := slices.IndexFunc(doc.Syncs, func(s desired.SyncRequest) bool { return s.ID == "s-c1-override" }); i < 0 ||
		doc.Syncs[i] != (desired.SyncRequest{ID: "s-c1-override", Release: "baseline", Override: true, Actor: "token:ops"}) {
		t.Errorf("c1's override request: %+v", doc.Syncs)
	}
	if _, err := st.GetRecord(t.Context(), syncreq.Kind, "s-old"); err == nil {
		t.Error("the expired request s-old is still stored")
	}
	if _, err := st.GetRecord(t.Context(), syncreq.Kind, "s-other-release"); err == nil {
		t.Error("s-other-release, which concerns no cluster (none holds release web), is still stored")
	}

	st.failRecords = true
	c.reschedule(t.Context())
	check("a failed read of the requests")
	st.failRecords = false

	report := func(cluster, id string) {
		detail, _ := json.Marshal(map[string]any{"release": "baseline", "phase": "Ready", "syncId": id})
		st.mu.Lock()
		st.statuses = append(st.statuses, store.AssignmentStatus{Cluster: cluster, Release: "baseline", Phase: "Ready", Detail: detail})
		st.mu.Unlock()
	}
	report("c1", "s-all")
	report("c1", "s-c1-override")
	c.reschedule(t.Context())
	want = map[string][]string{"c2": {"s-all"}, "c3": {"s-every-release-c3"}}
	check("c1 reported both")
	if _, err := st.GetRecord(t.Context(), syncreq.Kind, "s-c1-override"); err == nil {
		t.Error("s-c1-override is still stored after its one cluster reported it")
	}
	if _, err := st.GetRecord(t.Context(), syncreq.Kind, "s-all"); err != nil {
		t.Errorf("s-all was deleted before c2 reported it: %v", err)
	}

	// c1's next report carries no sync id: c1 stays done with s-all all the same.
	st.mu.Lock()
	for i := range st.statuses {
		if st.statuses[i].Cluster == "c1" {
			st.statuses[i].Detail = []byte(`{"release":"baseline","phase":"Ready"}`)
		}
	}
	st.mu.Unlock()
	c.reschedule(t.Context())
	check("c1's next report, without the ids")
	if rec, err := st.GetRecord(t.Context(), syncreq.Kind, "s-all"); err != nil || !strings.Contains(string(rec.Data), `"reported":["c1"]`) {
		t.Errorf("s-all does not remember that c1 reported it: %s (%v)", rec.Data, err)
	}

	// The pending requests' expiry wakes the controller, with nothing else changing.
	select {
	case <-c.trigger:
	default:
	}
	eventually.Within(t, 10*time.Second, waiting(clk, "a wake-up pending at the requests' expiry"))
	clk.Advance(syncreq.TTL)
	eventually.Within(t, 10*time.Second, triggered(c, "the wake-up at the expiry"))

	report("c2", "s-all")
	c.reschedule(t.Context())
	want = map[string][]string{}
	check("c2 reported, and c3's request expired")
	recs, _ := st.ListRecords(t.Context(), syncreq.Kind)
	var left []string
	for _, r := range recs {
		left = append(left, r.Key)
	}
	if len(left) != 0 {
		t.Errorf("requests still stored: %v", left)
	}
}

// countingPoller is a real poller that counts each source's resolves.
type countingPoller struct {
	*source.Poller
	mu       sync.Mutex
	resolves map[string]int
}

func (p *countingPoller) Resolve(ctx context.Context, g source.Git) (source.Resolved, error) {
	p.mu.Lock()
	p.resolves[g.Name]++
	p.mu.Unlock()
	return p.Poller.Resolve(ctx, g)
}

func (p *countingPoller) count(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resolves[name]
}

// A webhook's push polls at once, on a clock that never reaches the sources' hour-long
// interval, the sources of that repository that the ref may have moved, and no other; the
// new commit reaches the desired state.
func TestPollNowPollsOnlyMatchingSourcesAtOnce(t *testing.T) {
	t.Parallel()
	repo, other := newGitRepo(t), newGitRepo(t)
	first := repo.commit("baseline/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
	pinned := first
	other.commit("baseline/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
	src := func(name, url, ref string) string {
		return fmt.Sprintf("apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: %s}\nspec:\n  git: {url: '%s'%s}\n  interval: 1h\n---\n", name, url, ref)
	}
	fleet := src("apps", repo.url(), ", branch: main") + src("apps-head", repo.url()+".git/", "") +
		src("apps-dev", repo.url(), ", branch: dev") + src("apps-pinned", repo.url(), ", commit: "+pinned) +
		src("other", other.url(), ", branch: main") +
		"apiVersion: flotilla.dev/v1alpha1\nkind: Release\nmetadata: {name: web}\nspec:\n  source: apps\n  path: baseline\n  targets: [{selector: {}}]\n"
	fleetDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	arts, err := artifact.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &fakeStore{clusters: []store.Cluster{{Name: "c1"}}, docs: map[string]store.DesiredState{}, fail: map[string]int{}}
	poller := &countingPoller{Poller: source.NewPoller(t.TempDir()), resolves: map[string]int{}}
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	c, err := New(Deps{Store: st, Poller: poller, Artifacts: arts, Lease: heldLease{}, Clock: clk}, Options{Fleet: fleetDir, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	revision := func() string {
		doc, ok := st.docs["c1"]
		if !ok {
			return ""
		}
		d, err := desired.DecodeDocument(doc.Document)
		if err != nil || len(d.Assignments) != 1 {
			return ""
		}
		return d.Assignments[0].Revision
	}
	stored := func(what, commit string) func() error {
		return func() error {
			st.mu.Lock()
			defer st.mu.Unlock()
			if rev := revision(); !strings.HasSuffix(rev, commit) {
				return fmt.Errorf("%s: c1's desired revision is %q, want one ending in %s", what, rev, commit)
			}
			return nil
		}
	}
	eventually.Within(t, 10*time.Second, stored("the first poll to reach the desired state", first))
	// apps-dev's branch does not exist: its first poll fails, and it is counted all the same.
	eventually.Within(t, 10*time.Second, func() error {
		got := map[string]int{}
		for _, s := range []string{"apps", "apps-head", "apps-dev", "other"} {
			got[s] = poller.count(s)
		}
		if got["apps"] != 1 || got["apps-head"] != 1 || got["apps-dev"] != 1 || got["other"] != 1 {
			return fmt.Errorf("every source's first poll: polls per source %v, want 1 each", got)
		}
		return nil
	})

	second := repo.commit("baseline/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {v: '2'}}\n")
	// The webhook names the repository by another of its URLs than the source's.
	got := c.PollNow(strings.Replace(repo.url(), "file://", "FILE://", 1)+".git", "refs/heads/main")
	slices.Sort(got)
	if want := []string{"apps", "apps-head"}; !slices.Equal(got, want) {
		t.Fatalf("PollNow polled %v, want %v (the main branch's source and the one following HEAD)", got, want)
	}
	eventually.Within(t, 10*time.Second, stored("the new commit to reach the desired state without the poll interval", second))
	if n := poller.count("apps-dev") + poller.count("other"); n != 2 {
		t.Errorf("apps-dev and other were resolved %d times in all, want 2 (their first polls only)", n)
	}
	if got := c.PollNow(other.url(), "refs/tags/v1"); len(got) != 0 {
		t.Errorf("a tag push polled %v, want nothing (no source follows tags)", got)
	}
	if got := c.PollNow("https://git.example.com/unknown.git", "refs/heads/main"); len(got) != 0 {
		t.Errorf("a push to an unknown repository polled %v", got)
	}
}

// lostLease is a replica that does not hold the lease.
type lostLease struct{}

func (lostLease) Held() bool               { return false }
func (lostLease) Changed() <-chan struct{} { return nil }

// With replicas, a webhook may reach one that does not poll: it stores the poll in the shared
// store, and the replica holding the lease takes it at its next reschedule and polls it at
// once, whatever the source's interval.
func TestPollNowOnAReplicaWithoutTheLease(t *testing.T) {
	t.Parallel()
	const fleet = "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: apps}\nspec:\n  git: {url: 'https://git.example.com/apps.git', branch: main}\n  interval: 1h\n"
	fleetDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	st := &fakeStore{clusters: []store.Cluster{{Name: "c1"}}, docs: map[string]store.DesiredState{}, fail: map[string]int{}}
	replica := func(lease Lease) *Controller {
		arts, err := artifact.NewStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Deps{Store: st, Poller: downPoller{}, Artifacts: arts, Lease: lease, Clock: clock.NewFake(time.Unix(0, 0))},
			Options{Fleet: fleetDir, WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		c.loadFleet(t.Context())
		return c
	}
	follower, holder := replica(lostLease{}), replica(heldLease{})

	if got := follower.PollNow("git@git.example.com:apps.git", "refs/heads/main"); !slices.Equal(got, []string{"apps"}) {
		t.Fatalf("PollNow on the follower: %v, want [apps]", got)
	}
	if u := follower.takeUrgent(); len(u) != 0 {
		t.Errorf("the follower marked %v to poll itself; it does not poll", u)
	}
	if _, err := st.GetRecord(t.Context(), KindPollRequest, "apps"); err != nil {
		t.Fatalf("the poll was not stored for the holder: %v", err)
	}
	holder.reschedule(t.Context())
	if u := holder.takeUrgent(); !u["apps"] || len(u) != 1 {
		t.Errorf("the holder's sources to poll at once: %v, want apps", u)
	}
	if _, err := st.GetRecord(t.Context(), KindPollRequest, "apps"); err == nil {
		t.Error("the stored poll is still there after the holder took it")
	}
}
