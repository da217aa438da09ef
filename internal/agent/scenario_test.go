package agent

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/datadriven"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/pki"
	"github.com/flotilla/flotilla/internal/window"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// TestScenarios runs testdata/scenarios/*.txt (the commands are in its README.md): each file
// drives one real agent's reconcile loop in a testing/synctest bubble, so that its clock is
// the bubble's fake time and "nothing more happens" is synctest.Wait, not a poll. The agent
// fetches artifacts from an in-memory hub and reconciles into an in-memory target that
// records every call. Run with -rewrite to regenerate the expected output.
func TestScenarios(t *testing.T) {
	t.Parallel()
	datadriven.Walk(t, filepath.Join("testdata", "scenarios"), func(t *testing.T, path string) {
		if !strings.HasSuffix(path, ".txt") {
			return
		}
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := newScenario(t)
			defer func() { s.stop() }() // the agent a restart left running
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				out, err := s.run(d)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return out
			})
		})
	})
}

// scenarioStart is the bubble's time when a scenario begins: 2026-12-01 12:00 UTC, a Tuesday.
var scenarioStart = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// scenario is one agent on one state dir, its hub and its cluster.
type scenario struct {
	t      *testing.T
	dir    string
	hub    *memHub
	target *memTarget
	a      *Agent
	stop   func()
	// gen is the generation of the last desired state offered; events and seq what the step
	// output has shown of the target's calls and of the outbox.
	gen    int64
	events int
	seq    uint64
}

func newScenario(t *testing.T) *scenario {
	// synctest bubble: this Sleep moves the bubble's fake clock to the scenario's start, no real wait.
	time.Sleep(time.Until(scenarioStart))
	s := &scenario{t: t, dir: filepath.Join(t.TempDir(), "state"), hub: newMemHub(t), target: &memTarget{}}
	s.hub.identity(s.dir, "edge-scen")
	s.start()
	return s
}

// start opens an agent on the state dir and runs its reconcile loop.
func (s *scenario) start() {
	s.t.Helper()
	s.a, s.stop = runLoop(s.t, Options{StateDir: s.dir, Target: s.target, WrapTransport: s.hub.transport})
}

func (s *scenario) run(d *datadriven.TestData) (string, error) {
	arg := func(i int) string {
		if i < len(d.CmdArgs) {
			return d.CmdArgs[i].Key
		}
		return ""
	}
	switch d.Cmd {
	case "clock":
		at, err := time.Parse("2006-01-02T15:04Z07:00", arg(0))
		if err != nil {
			return "", err
		}
		if at.Before(time.Now()) {
			return "", fmt.Errorf("clock %s: the clock does not go back (it is %s)", arg(0), time.Now().UTC().Format(time.RFC3339))
		}
		// synctest bubble: the fake clock jumps to at, no real wait.
		time.Sleep(time.Until(at))
		return s.step(), nil
	case "tick":
		dur, err := time.ParseDuration(arg(0))
		if err != nil {
			return "", err
		}
		// synctest bubble: the fake clock moves on by dur, no real wait.
		time.Sleep(dur)
		return s.step(), nil
	case "desired":
		ds, err := s.parseDesired(d.Input)
		if err != nil {
			return "", err
		}
		m, err := desired.StateToProto(ds)
		if err != nil {
			return "", err
		}
		s.gen = ds.Generation
		s.a.offer(m)
		return s.answer(ds.Generation) + s.step(), nil
	case "fail", "heal":
		for _, a := range d.CmdArgs {
			s.target.setFail(a.Key, d.Cmd == "fail")
		}
		return "ok\n", nil
	case "fail-list", "heal-list":
		s.target.mu.Lock()
		s.target.failList = d.Cmd == "fail-list"
		s.target.mu.Unlock()
		return "ok\n", nil
	case "inventory":
		for _, a := range d.CmdArgs {
			s.target.put(a.Key, "left by another agent")
		}
		return "ok\n", nil
	case "hub":
		if arg(0) != "down" && arg(0) != "up" {
			return "", fmt.Errorf("hub %s: want hub down or hub up", arg(0))
		}
		s.hub.setDown(arg(0) == "down")
		return "ok\n", nil
	case "restart":
		s.stop()
		s.start()
		return s.step(), nil
	case "reset":
		// Another agent, on a new state dir and an empty cluster; the time goes on.
		s.stop()
		s.dir, s.target, s.gen, s.events, s.seq = filepath.Join(s.t.TempDir(), "state"), &memTarget{}, 0, 0, 0
		s.hub.setDown(false)
		s.hub.identity(s.dir, "edge-scen")
		s.start()
		return "ok\n", nil
	case "report":
		return s.report(), nil
	case "cluster":
		return s.cluster(), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// step lets the agent do what it does until every goroutine waits (on its timer, mostly), and
// says what it did since the last step: its calls to the target, then its reports.
func (s *scenario) step() string {
	synctest.Wait()
	var b strings.Builder
	for _, e := range s.target.since(s.events) {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	s.events = s.target.count()
	reports, err := s.a.st.pending(1 << 20)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, r := range reports {
		if r.GetSeq() <= s.seq {
			continue
		}
		s.seq = r.GetSeq()
		for _, st := range r.GetStatuses() {
			b.WriteString("report " + statusLine(st))
		}
	}
	if b.Len() == 0 {
		return "nothing\n"
	}
	return b.String()
}

// answer is what the agent made of the desired state it was offered, as its heartbeat tells
// the hub.
func (s *scenario) answer(gen int64) string {
	hb := s.a.heartbeatRequest()
	if hb.RefusedGeneration == gen {
		return fmt.Sprintf("refused generation %d (generation %d in force): %s\n", gen, hb.Generation, hb.RefusedReason)
	}
	return fmt.Sprintf("accepted generation %d\n", hb.Generation)
}

// report is what the hub knows: the generation the agent runs or refuses, and the newest
// status of each release.
func (s *scenario) report() string {
	synctest.Wait()
	var b strings.Builder
	hb := s.a.heartbeatRequest()
	fmt.Fprintf(&b, "generation %d\n", hb.Generation)
	if hb.RefusedGeneration != 0 {
		fmt.Fprintf(&b, "refused generation %d: %s\n", hb.RefusedGeneration, hb.RefusedReason)
	}
	reports, err := s.a.st.pending(1 << 20)
	if err != nil {
		s.t.Fatal(err)
	}
	last := map[string]*agentv1.AssignmentStatus{}
	for _, r := range reports {
		for _, st := range r.GetStatuses() {
			last[st.GetRelease()] = st
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(last)) {
		b.WriteString(statusLine(last[rel]))
	}
	return b.String()
}

// cluster is what the target holds, and what the agent's state dir keeps in force for each
// release it knows of.
func (s *scenario) cluster() string {
	synctest.Wait()
	var b strings.Builder
	s.target.mu.Lock()
	held := maps.Clone(s.target.held)
	s.target.mu.Unlock()
	if len(held) == 0 {
		b.WriteString("cluster holds nothing\n")
	}
	for _, rel := range slices.Sorted(maps.Keys(held)) {
		fmt.Fprintf(&b, "cluster holds %s: %s\n", rel, held[rel])
	}
	names := map[string]bool{}
	for rel := range held {
		names[rel] = true
	}
	if ds := s.a.currentDesired(); ds != nil {
		for _, as := range ds.Assignments {
			names[as.Release] = true
		}
		for _, tb := range ds.Removed {
			names[tb.Release] = true
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(names)) {
		inForce := "nothing"
		if as := s.a.st.applied(rel); as != nil {
			inForce = as.Revision
		}
		ready := ""
		if s.a.st.release(rel).ReadyKey != "" {
			ready = " (Ready)"
		}
		fmt.Fprintf(&b, "agent has in force for %s: %s%s\n", rel, inForce, ready)
	}
	return b.String()
}

// statusLine is one status as the hub shows it, with the sentences a user reads on lines of
// their own.
func statusLine(st *agentv1.AssignmentStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s gen=%d %s", st.GetRelease(), st.GetGeneration(), st.GetPhase())
	if v := st.GetRevision(); v != "" {
		fmt.Fprintf(&b, " revision=%s", v)
	}
	if v := st.GetPendingRevision(); v != "" {
		fmt.Fprintf(&b, " pending=%s", v)
	}
	if v := st.GetSyncId(); v != "" {
		fmt.Fprintf(&b, " sync=%s", v)
	}
	if v := st.GetPruned(); v != 0 {
		fmt.Fprintf(&b, " pruned=%d", v)
	}
	b.WriteByte('\n')
	if v := st.GetWaiting(); v != "" {
		fmt.Fprintf(&b, "  waiting: %s\n", v)
	}
	if v := st.GetError(); v != "" {
		fmt.Fprintf(&b, "  error: %s\n", v)
	}
	if rm := st.GetRemoval(); rm != nil {
		fmt.Fprintf(&b, "  removal: reason=%s fleetRevision=%s", rm.GetReason(), rm.GetFleetRevision())
		if v := rm.GetActor(); v != "" {
			fmt.Fprintf(&b, " actor=%s", v)
		}
		if v := rm.GetPrunedObjects(); len(v) > 0 {
			fmt.Fprintf(&b, " pruned: %s", strings.Join(v, ", "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// scenarioDoc is the body of `desired`: what the hub hands the agent, in the few words a
// scenario needs.
type scenarioDoc struct {
	// Generation defaults to the last one offered plus one.
	Generation int64 `json:"generation"`
	// OldHub: a hub older than tombstones, which sends no explicit_removals.
	OldHub      bool                 `json:"oldHub"`
	Assignments []scenarioAssignment `json:"assignments"`
	Gates       []scenarioGate       `json:"gates"`
	// ManyFreezes adds this many freezes (f0, f1 ...) to the gates: a document with more
	// gates than the agent reads.
	ManyFreezes int                   `json:"manyFreezes"`
	Removed     []desired.Tombstone   `json:"removed"`
	Syncs       []desired.SyncRequest `json:"syncs"`
}

// scenarioAssignment is one release. Its artifact holds PATH/cm.yaml, a ConfigMap named for
// the path whose data.version is Version: what the target's calls show.
type scenarioAssignment struct {
	Release  string `json:"release"`
	Revision string `json:"revision"`
	// Version defaults to the revision; Path to the release.
	Version   string   `json:"version"`
	Path      string   `json:"path"`
	DependsOn []string `json:"dependsOn"`
	// Prune and SelfHeal default to true; Interval (the drift check) to 24h.
	Prune    *bool  `json:"prune"`
	SelfHeal *bool  `json:"selfHeal"`
	Interval string `json:"interval"`
}

// scenarioGate is a window.Gate with its duration written as Go writes durations.
type scenarioGate struct {
	window.Gate
	Duration string `json:"duration"`
}

func (s *scenario) parseDesired(input string) (desired.State, error) {
	var doc scenarioDoc
	if err := yaml.UnmarshalStrict([]byte(input), &doc); err != nil {
		return desired.State{}, fmt.Errorf("desired: %w", err)
	}
	gen := doc.Generation
	if gen == 0 {
		gen = s.gen + 1
	}
	ds := desired.State{Cluster: "edge-scen", Generation: gen, ExplicitRemovals: !doc.OldHub,
		Document: desired.Document{Removed: doc.Removed, Syncs: doc.Syncs}}
	for _, in := range doc.Assignments {
		path, version := cmp.Or(in.Path, in.Release), cmp.Or(in.Version, in.Revision)
		interval := 24 * time.Hour
		if in.Interval != "" {
			d, err := time.ParseDuration(in.Interval)
			if err != nil {
				return desired.State{}, fmt.Errorf("release %s: %w", in.Release, err)
			}
			interval = d
		}
		ds.Assignments = append(ds.Assignments, desired.Assignment{
			Release: in.Release, Revision: in.Revision, Digest: s.hub.version(path, version), Path: path, Namespace: in.Release,
			Prune: in.Prune == nil || *in.Prune, SelfHeal: in.SelfHeal == nil || *in.SelfHeal, Interval: interval,
			Vars: map[string]string{}, DependsOn: in.DependsOn,
		})
	}
	for _, g := range doc.Gates {
		gate := g.Gate
		if g.Duration != "" {
			d, err := time.ParseDuration(g.Duration)
			if err != nil {
				return desired.State{}, fmt.Errorf("gate %s: %w", g.Name, err)
			}
			gate.Duration = d
		}
		ds.Gates = append(ds.Gates, gate)
	}
	for i := range doc.ManyFreezes {
		ds.Gates = append(ds.Gates, window.Gate{Name: fmt.Sprint("f", i), Kind: window.KindFreeze})
	}
	return ds, nil
}

// memHub serves artifacts to the agent through its HTTP transport (Options.WrapTransport)
// without a network, so that every goroutine of the agent stays in the bubble; down makes
// every request fail as if the hub were unreachable.
type memHub struct {
	t  *testing.T
	ca *pki.CA

	mu        sync.Mutex
	artifacts map[string][]byte // "/artifacts/sha256/HEX" -> tar.gz
	digests   map[string]string // path@version -> digest
	down      bool
}

func newMemHub(t *testing.T) *memHub {
	ca, err := pki.LoadOrCreateCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return &memHub{t: t, ca: ca, artifacts: map[string][]byte{}, digests: map[string]string{}}
}

// identity writes into dir the identity an agent of cluster has after joining this hub.
func (h *memHub) identity(dir, cluster string) {
	h.t.Helper()
	writeIdentity(h.t, h.ca, dir, cluster, "https://hub.scenario.invalid")
}

// version is the digest of an artifact whose path/cm.yaml is a ConfigMap with data.version v,
// packed and served on first use.
func (h *memHub) version(path, v string) string {
	h.t.Helper()
	h.mu.Lock()
	digest, ok := h.digests[path+"@"+v]
	h.mu.Unlock()
	if ok {
		return digest
	}
	dir := h.t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {version: %q}\n", path, v)
	if err := os.WriteFile(filepath.Join(dir, path, "cm.yaml"), []byte(cm), 0o644); err != nil {
		h.t.Fatal(err)
	}
	var buf bytes.Buffer
	digest, _, err := artifact.Pack(h.t.Context(), dir, &buf)
	if err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.digests[path+"@"+v] = digest
	h.artifacts["/artifacts/sha256/"+strings.TrimPrefix(digest, "sha256:")] = buf.Bytes()
	return digest
}

func (h *memHub) setDown(down bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down = down
}

// transport replaces the agent's transport to the hub.
func (h *memHub) transport(http.RoundTripper) http.RoundTripper { return h }

func (h *memHub) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	data, ok := h.artifacts[r.URL.Path]
	down := h.down
	h.mu.Unlock()
	if down {
		return nil, errors.New("dial tcp: connect: connection refused")
	}
	resp := &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{}, Request: r,
		Body: io.NopCloser(bytes.NewReader(data))}
	if !ok {
		resp.StatusCode, resp.Status, resp.Body = http.StatusNotFound, "404 Not Found", io.NopCloser(strings.NewReader("not found"))
	}
	return resp, nil
}

// memTarget is a cluster in memory: it records every Reconcile and Remove the agent makes,
// in order, and holds an inventory for each release applied and not removed. A release named
// in fail fails both; failList makes Inventories fail.
type memTarget struct {
	mu       sync.Mutex
	log      []string
	held     map[string]string // release -> what it holds
	fail     map[string]bool
	failList bool
}

func (m *memTarget) Reconcile(_ context.Context, objects []*unstructured.Unstructured, opts reconcile.Options) (*reconcile.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var what []string
	for _, o := range objects {
		v, _, _ := unstructured.NestedString(o.Object, "data", "version")
		what = append(what, o.GetName()+"@"+v)
	}
	prune := fmt.Sprint(opts.Prune)
	if opts.Prune && opts.DeferPrune {
		prune = "held"
	}
	line := fmt.Sprintf("%s apply %s: %s prune=%s selfHeal=%t", time.Now().UTC().Format("Mon 15:04:05"), opts.Name, strings.Join(what, " "), prune, opts.SelfHeal)
	res := &reconcile.Result{Name: opts.Name}
	if m.fail[opts.Name] {
		m.log = append(m.log, line+" -> fails")
		return res, fmt.Errorf("%s: api server says no", opts.Name)
	}
	m.log = append(m.log, line)
	m.putLocked(opts.Name, strings.Join(what, " "))
	return res, nil
}

func (m *memTarget) Remove(_ context.Context, name string) (*reconcile.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	line := fmt.Sprintf("%s remove %s", time.Now().UTC().Format("Mon 15:04:05"), name)
	res := &reconcile.Result{Name: name}
	if m.fail[name] {
		m.log = append(m.log, line+" -> fails")
		return res, fmt.Errorf("%s: api server says no", name)
	}
	m.log = append(m.log, line)
	if _, ok := m.held[name]; ok {
		res.Objects = append(res.Objects, reconcile.ObjectResult{
			ObjectRef: reconcile.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: name, Name: name}, Action: reconcile.Pruned,
		})
		delete(m.held, name)
	}
	return res, nil
}

func (m *memTarget) Inventories(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failList {
		return nil, errors.New("list inventories: forbidden")
	}
	return slices.Sorted(maps.Keys(m.held)), nil
}

func (m *memTarget) put(release, what string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putLocked(release, what)
}

func (m *memTarget) putLocked(release, what string) {
	if m.held == nil {
		m.held = map[string]string{}
	}
	m.held[release] = what
}

func (m *memTarget) setFail(release string, fail bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail == nil {
		m.fail = map[string]bool{}
	}
	m.fail[release] = fail
}

func (m *memTarget) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.log)
}

func (m *memTarget) since(n int) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.log[n:])
}
