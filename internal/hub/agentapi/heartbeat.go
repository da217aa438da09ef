package agentapi

import (
	"context"
	"fmt"
	"sync"
	"unicode/utf8"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/audit"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Heartbeat records that the agent is alive, with its outbox depth, and a desired state it
// refused (refused_generation, refused_reason): that is logged, counted, and audited once per
// cluster and generation, so that operators see an agent running on an older desired state.
//
// An agent whose watch stream is open here sends one only when what it carries changes (and
// every few minutes); the stream's opening carries one too (WatchRequest.heartbeat).
func (a *agentServer) Heartbeat(ctx context.Context, req *connect.Request[agentv1.HeartbeatRequest]) (*connect.Response[agentv1.HeartbeatResponse], error) {
	if err := a.s.heartbeat(ctx, clusterFrom(ctx), req.Msg); err != nil {
		return nil, err
	}
	return connect.NewResponse(&agentv1.HeartbeatResponse{}), nil
}

// heartbeat takes in what a heartbeat carries: the outbox depth and version, the age
// recipient, and a refusal.
func (s *Server) heartbeat(ctx context.Context, cluster string, hb *agentv1.HeartbeatRequest) error {
	s.d.Seen.Heartbeat(cluster, hb.GetAgentVersion(), int(hb.GetOutboxDepth()))
	if err := s.observeAgeKey(ctx, cluster, hb.GetAgeRecipient()); err != nil {
		return err
	}
	if err := s.observeProjectKeys(ctx, cluster, hb.GetProjectAgeRecipients()); err != nil {
		return err
	}
	if gen := hb.GetRefusedGeneration(); gen != 0 && s.refused.first(cluster, gen) {
		reason := boundReason(hb.GetRefusedReason())
		s.d.Metrics.DesiredRefused.Inc()
		s.d.Logger.Warn("agent refused its desired state; it keeps the last one it accepted", "cluster", cluster, "generation", gen, "reason", reason)
		s.d.Record(ctx, audit.Event{Actor: "agent:" + cluster, Action: "desired.refused", Cluster: cluster, Detail: map[string]any{
			"generation": gen, "reason": reason,
		}})
	}
	return nil
}

// maxReasonBytes bounds the refusal reason an agent sends, as it goes into logs and the audit
// trail: an agent's own reason names a few releases, far below it.
const maxReasonBytes = 1024

// boundReason cuts an agent's refusal reason to maxReasonBytes, on a UTF-8 boundary, and says
// that it did.
func boundReason(r string) string {
	if len(r) <= maxReasonBytes {
		return r
	}
	cut := maxReasonBytes
	for cut > 0 && !utf8.RuneStart(r[cut]) {
		cut--
	}
	return r[:cut] + fmt.Sprintf(" ... (%d bytes cut)", len(r)-cut)
}

// refusals remembers, per cluster, the refused generation last recorded: an agent repeats
// its refusal in every heartbeat until a newer desired state replaces it, and that is one
// event, not one per heartbeat. One entry per cluster bounds it by the fleet; a removed
// cluster's entry is dropped by forget.
type refusals struct {
	mu   sync.Mutex
	last map[string]int64
}

func newRefusals() *refusals { return &refusals{last: map[string]int64{}} }

// first reports whether (cluster, generation) is new, and remembers it.
func (r *refusals) first(cluster string, generation int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last[cluster] == generation {
		return false
	}
	r.last[cluster] = generation
	return true
}

func (r *refusals) forget(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, cluster)
}

// ForgetCluster drops what the endpoint remembers of a removed cluster.
func (s *Server) ForgetCluster(cluster string) {
	s.refused.forget(cluster)
	if s.d.AgeKeys != nil {
		s.d.AgeKeys.Forget(cluster)
	}
}
