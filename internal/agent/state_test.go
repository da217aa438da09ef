package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/flotilla/flotilla/internal/desired"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

func report(releases ...string) *agentv1.Report {
	r := &agentv1.Report{}
	for _, rel := range releases {
		r.Statuses = append(r.Statuses, &agentv1.AssignmentStatus{Release: rel, Phase: "Ready"})
	}
	return r
}

func TestOutbox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := openState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.setNextSeq(100); err != nil {
		t.Fatal(err)
	}
	const bound = 4
	// The hub is away: 10 reconciles of "web" and "db", alternating, then "api" once.
	for i := range 10 {
		rel := []string{"web", "db"}[i%2]
		if err := st.enqueue(report(rel), bound); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.enqueue(report("api"), bound); err != nil {
		t.Fatal(err)
	}
	// The outbox survives a restart of the agent.
	st.close()
	if st, err = openState(dir); err != nil {
		t.Fatal(err)
	}
	defer func() { st.close() }() // the st of the last open below, not this one

	pending, err := st.pending(100)
	if err != nil {
		t.Fatal(err)
	}
	if d := st.outboxDepth(); d != len(pending) {
		t.Errorf("outbox depth counter = %d, but the outbox holds %d reports", d, len(pending))
	}
	if len(pending) > bound {
		t.Errorf("outbox holds %d reports, bound is %d", len(pending), bound)
	}
	newest := map[string]uint64{}
	var compacted uint64
	for _, r := range pending {
		compacted += r.Compacted
		for _, s := range r.Statuses {
			newest[s.Release] = max(newest[s.Release], r.Seq)
		}
	}
	// The newest status of every release survives: web's last was seq 108, db's 109, api's 110.
	want := map[string]uint64{"web": 108, "db": 109, "api": 110}
	for rel, seq := range want {
		if newest[rel] != seq {
			t.Errorf("release %s: newest surviving report seq %d, want %d", rel, newest[rel], seq)
		}
	}
	// Nothing lost silently: what is pending plus what was compacted is everything produced.
	if got := uint64(len(pending)) + compacted; got != 11 {
		t.Errorf("pending %d + compacted %d = %d, want the 11 reports produced", len(pending), compacted, got)
	}
	if pending[0].Seq < 100 {
		t.Errorf("first seq %d: the seq the hub gave at join (100) was not used", pending[0].Seq)
	}

	var seqs []uint64
	for _, r := range pending {
		seqs = append(seqs, r.Seq)
	}
	if err := st.ack(seqs); err != nil {
		t.Fatal(err)
	}
	if err := st.ack(seqs[:1]); err != nil { // a late duplicate ack changes nothing
		t.Fatal(err)
	}
	if n := st.outboxDepth(); n != 0 {
		t.Errorf("outbox depth after acking everything = %d", n)
	}
	st.close()
	stats, err := ReadStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	if stats.NextSeq != 111 || stats.Outbox != 0 {
		t.Errorf("ReadStats = %+v, want next seq 111 and an empty outbox", stats)
	}
	if st, err = openState(dir); err != nil { // for the deferred close
		t.Fatal(err)
	}
}

func TestOutboxWithdraw(t *testing.T) {
	t.Parallel()
	st, err := openState(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	for _, r := range []*agentv1.Report{report("baseline"), report("web"), report("baseline", "web"), report("baseline")} {
		if err := st.enqueue(r, 0); err != nil {
			t.Fatal(err)
		}
	}
	// A report that carries a compacted count keeps it, emptied.
	carrier := report("baseline")
	carrier.Compacted = 3
	if err := st.enqueue(carrier, 0); err != nil {
		t.Fatal(err)
	}
	n, err := st.withdraw([]string{"baseline"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("withdrew %d statuses, want 4", n)
	}
	pending, err := st.pending(100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range pending {
		s := ""
		for _, st := range r.Statuses {
			s += st.Release
		}
		got = append(got, fmt.Sprintf("%d:%s/%d", r.Seq, s, r.Compacted))
	}
	if want := []string{"2:web/0", "3:web/0", "5:/3"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outbox = %v, want %v", got, want)
	}
	if d := st.outboxDepth(); d != len(pending) {
		t.Errorf("outbox depth counter = %d, but the outbox holds %d reports", d, len(pending))
	}
}

// What an agent before the desired model kept stays what this one reads and writes: the
// assignment in force as its wire form (deterministic bytes, so unchanged assignments are not
// rewritten) and its readiness under the hash of those bytes, so an upgrade neither
// forgets a release held by a gate nor makes its dependents wait for it again.
func TestReleaseRecordsKeepTheirFormat(t *testing.T) {
	t.Parallel()
	sent := &agentv1.Assignment{
		Release: "web", Revision: "main@1", Digest: "sha256:aa", Path: "web", Namespace: "web", IntervalSeconds: 60, TimeoutSeconds: 30,
		Vars: map[string]string{"region": "eu", "env": "prod"}, DependsOn: []string{"db"},
		Project: &agentv1.ProjectRules{Name: "team-a", Namespaces: []string{"web"}, ServiceAccountNamespace: "web", ServiceAccountName: "deployer"},
		Helm:    &agentv1.HelmRelease{ReleaseName: "web", ValuesJson: []byte(`{"big":9007199254740993,"replicas":2}`)},
	}
	old, err := proto.MarshalOptions{Deterministic: true}.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := desired.FromProto(&agentv1.DesiredState{Assignments: []*agentv1.Assignment{sent}})
	if err != nil {
		t.Fatal(err)
	}
	as := &ds.Assignments[0]
	got, err := appliedBytes(as)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, old) {
		t.Errorf("the assignment in force is recorded as\n%x\nwhere an older agent recorded\n%x", got, old)
	}
	sum := sha256.Sum256(old)
	if key := assignmentKey(as); key != hex.EncodeToString(sum[:]) {
		t.Errorf("assignmentKey = %s, want the hash an older agent recorded as ReadyKey", key)
	}

	// Written by an older agent, read back by this one.
	st, err := openState(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if err := st.setRelease("web", releaseRecord{Applied: old, ReadyKey: hex.EncodeToString(sum[:])}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(as, st.applied("web")); diff != "" {
		t.Errorf("assignment in force read back (-want +got):\n%s", diff)
	}
}
