package agentapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/store"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// watchRetry is how soon an open watch reads the desired state again after a failed read.
const watchRetry = time.Second

// Watch sends the cluster's desired state whenever its generation differs from the last one
// the agent has, starting with known_generation: a reconnecting agent that is up to date
// receives nothing until something changes, but for the stream's first message saying that
// the open stream counts as hearing from the agent (stream_liveness). While it is open the
// cluster is heard from (LastSeen.Open); the heartbeat the request carries is taken as one.
func (a *agentServer) Watch(ctx context.Context, req *connect.Request[agentv1.WatchRequest], stream *connect.ServerStream[agentv1.WatchResponse]) error {
	s, cluster := a.s, clusterFrom(ctx)
	changes, cancel, err := s.d.Watchers.Subscribe(cluster)
	if err != nil {
		return connect.NewError(connect.CodeResourceExhausted, err)
	}
	defer cancel()
	closed := s.d.Seen.Open(cluster, req.Msg.GetAgentVersion())
	defer closed()
	if hb := req.Msg.GetHeartbeat(); hb != nil {
		if err := s.heartbeat(ctx, cluster, hb); err != nil {
			// The stream matters more than what the heartbeat carries: the agent learns of
			// the refusal when it sends the same in a heartbeat.
			s.d.Logger.Warn("heartbeat carried by a watch request refused", "cluster", cluster, "error", err)
		}
	}
	known := req.Msg.GetKnownGeneration()
	for first := true; ; first = false {
		var retry <-chan time.Time
		msg, gen, err := s.nextDesired(ctx, cluster, known)
		switch {
		case err != nil && (first || connect.CodeOf(err) == connect.CodeInternal):
			return err
		case err != nil:
			// The store is away for a moment (a cut connection, a fail-over): keep the agent's
			// stream and read again shortly, rather than have every agent reconnect at once.
			s.d.Logger.Warn("desired state not read for an open watch; retrying", "cluster", cluster, "error", err)
			retry = s.d.Clock.After(watchRetry)
		case msg != nil || first:
			if msg == nil {
				msg = &agentv1.WatchResponse{}
			}
			msg.StreamLiveness = first
			if err := stream.Send(msg); err != nil {
				return err
			}
			known = gen
		}
		select {
		case <-ctx.Done():
			return nil
		case <-retry:
		case _, open := <-changes:
			if !open {
				return connect.NewError(connect.CodePermissionDenied, fmt.Errorf("cluster %q was removed", cluster))
			}
		}
	}
}

// nextDesired reads the cluster's desired state and returns it as a message when its
// generation is not known, with the generation the agent then has. A cluster not scheduled
// yet has none: the controller notifies when it has.
func (s *Server) nextDesired(ctx context.Context, cluster string, known int64) (*agentv1.WatchResponse, int64, error) {
	ds, err := s.d.Store.GetDesiredState(ctx, cluster)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, known, nil
	case err != nil:
		return nil, known, connect.NewError(connect.CodeUnavailable, err)
	case ds.Generation == known:
		return nil, known, nil
	}
	msg, err := DesiredToProto(ds)
	if err != nil {
		return nil, known, connect.NewError(connect.CodeInternal, err)
	}
	return &agentv1.WatchResponse{Desired: msg}, ds.Generation, nil
}

// DesiredToProto is a stored desired state as the agent receives it.
func DesiredToProto(ds store.DesiredState) (*agentv1.DesiredState, error) {
	doc, err := desired.DecodeDocument(ds.Document)
	if err != nil {
		return nil, fmt.Errorf("desired state of cluster %q: %w", ds.Cluster, err)
	}
	return desired.ToProto(ds.Cluster, ds.Generation, doc)
}
