package agentapi

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flotilla/flotilla/internal/audit"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// TestHeartbeatRecordsRefusedDesiredStateOnce: an agent repeats a refusal in every
// heartbeat; the hub counts and audits it once per cluster and generation.
func TestHeartbeatRecordsRefusedDesiredStateOnce(t *testing.T) {
	t.Parallel()
	var records []audit.Event
	m := NewMetrics()
	s := New(Deps{
		Seen: NewLastSeen(nil, nil, nil), Metrics: m,
		Record: func(_ context.Context, e audit.Event) { records = append(records, e) },
	}, Options{})
	a := &agentServer{s: s}
	beat := func(cluster string, gen int64) {
		ctx := context.WithValue(t.Context(), clusterKey{}, cluster)
		req := &agentv1.HeartbeatRequest{AgentVersion: "v1", RefusedGeneration: gen}
		if gen != 0 {
			req.RefusedReason = "tombstones missing"
		}
		if _, err := a.Heartbeat(ctx, connect.NewRequest(req)); err != nil {
			t.Fatal(err)
		}
	}
	beat("eu-1", 0) // nothing refused
	beat("eu-1", 7)
	beat("eu-1", 7) // the same refusal, again
	beat("us-1", 7) // another cluster
	beat("eu-1", 8) // a newer refusal
	s.ForgetCluster("us-1")
	beat("us-1", 7) // removed and added again: news
	type rec struct {
		Cluster    string
		Generation any
	}
	var got []rec
	for _, e := range records {
		if e.Action != "desired.refused" || e.Detail["reason"] != "tombstones missing" {
			t.Errorf("record %+v", e)
		}
		got = append(got, rec{e.Cluster, e.Detail["generation"]})
	}
	want := []rec{{"eu-1", int64(7)}, {"us-1", int64(7)}, {"eu-1", int64(8)}, {"us-1", int64(7)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("desired.refused records (-want +got):\n%s", diff)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.DesiredRefused)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if n := mfs[0].GetMetric()[0].GetCounter().GetValue(); n != 4 {
		t.Errorf("flotilla_hub_desired_refused_total = %v, want 4", n)
	}
}

// An agent's refusal reason goes into the log and the audit trail: bounded, whatever it sends.
func TestHeartbeatBoundsTheRefusalReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"short", "drops release \"a\"", "drops release \"a\""},
		{"at the bound", strings.Repeat("x", maxReasonBytes), strings.Repeat("x", maxReasonBytes)},
		{"over it", strings.Repeat("x", maxReasonBytes+10), strings.Repeat("x", maxReasonBytes) + " ... (10 bytes cut)"},
		{"cut on a rune boundary", strings.Repeat("x", maxReasonBytes-1) + "é" + "yz", strings.Repeat("x", maxReasonBytes-1) + " ... (4 bytes cut)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := boundReason(tt.in); got != tt.want {
				t.Errorf("boundReason = %q (%d bytes), want %q", got, len(got), tt.want)
			}
		})
	}
}
