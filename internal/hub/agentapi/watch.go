package agentapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/hub/helmwire"
	"github.com/flotilla/flotilla/internal/hub/schedule"
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
	doc, err := schedule.DecodeDocument(ds.Document)
	if err != nil {
		return nil, fmt.Errorf("desired state of cluster %q: %w", ds.Cluster, err)
	}
	out := &agentv1.DesiredState{Cluster: ds.Cluster, Generation: ds.Generation, ExplicitRemovals: true}
	for _, t := range doc.Removed {
		out.Removed = append(out.Removed, &agentv1.Tombstone{
			Release: t.Release, Reason: t.Reason, FleetRevision: t.FleetRevision, Revision: t.Revision, Digest: t.Digest, Actor: t.Actor,
		})
	}
	for _, a := range doc.Assignments {
		pa := &agentv1.Assignment{
			Release: a.Release, Source: a.Source, Url: a.URL, Revision: a.Revision, Digest: a.Digest,
			Path: a.Path, Namespace: a.Namespace, CreateNamespace: a.CreateNamespace,
			Prune: a.Prune, SelfHeal: a.SelfHeal, Wait: a.Wait,
			TimeoutSeconds: int64(a.Timeout / time.Second), IntervalSeconds: int64(a.Interval / time.Second),
			Vars: a.Vars,
		}
		if a.Project != nil {
			pa.Project = a.Project.Proto() // unset: the platform project, no bounds
		}
		for _, r := range a.Ignore {
			pa.Ignore = append(pa.Ignore, &agentv1.IgnoreRule{
				Group: r.Target.Group, Kind: r.Target.Kind, Name: r.Target.Name, Namespace: r.Target.Namespace, Paths: r.Paths,
			})
		}
		pa.RespectManagers, pa.DependsOn, pa.Rollout = a.RespectManagers, a.DependsOn, a.Rollout
		if a.Adopt != nil {
			pa.Adopt = &agentv1.AdoptRules{FromManagers: a.Adopt.FromManagers, HelmRelease: a.Adopt.HelmRelease, HelmReleaseNamespace: a.Adopt.HelmReleaseNamespace}
		}
		pa.Decryption = a.Decryption
		if b := a.RenderBudget; b != nil {
			pa.RenderBudget = &agentv1.RenderBudget{
				MemoryBytes: b.MemoryBytes, CpuMillis: b.CPUTime.Milliseconds(), WallMillis: b.WallTime.Milliseconds(),
				Objects: int64(b.Objects), OutputBytes: b.OutputBytes,
			}
		}
		if a.Helm != nil {
			if pa.Helm, err = helmwire.Proto(a.Helm); err != nil {
				return nil, fmt.Errorf("desired state of cluster %q: release %q: %w", ds.Cluster, a.Release, err)
			}
		}
		out.Assignments = append(out.Assignments, pa)
	}
	for _, g := range doc.Gates {
		out.Gates = append(out.Gates, &agentv1.Gate{
			Name: g.Name, Kind: g.Kind, Type: g.Type, Schedule: g.Schedule,
			DurationSeconds: int64(g.Duration / time.Second), TimeZone: g.TimeZone,
			Releases: g.Releases, Blocks: g.Blocks, Reason: g.Reason, Actor: g.Actor,
		})
	}
	for _, r := range doc.Syncs {
		out.Syncs = append(out.Syncs, &agentv1.SyncRequest{Id: r.ID, Release: r.Release, Override: r.Override, Actor: r.Actor})
	}
	return out, nil
}
