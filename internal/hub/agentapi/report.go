package agentapi

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// maxReportsPerRequest bounds one Report call; agents send batches of at most 100.
const maxReportsPerRequest = 500

// maxStatusesPerReport bounds one report; agents put one status in each.
const maxStatusesPerReport = 1000

func (a *agentServer) Report(ctx context.Context, req *connect.Request[agentv1.ReportRequest]) (*connect.Response[agentv1.ReportResponse], error) {
	acked, err := a.s.IngestReports(ctx, clusterFrom(ctx), req.Msg.GetReports())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&agentv1.ReportResponse{Acked: acked}), nil
}

// IngestReports checks and ingests reports of cluster, in order, as the Report call does, and
// returns the seqs acked: those stored now or before ((cluster, seq) is ingested once). It
// stops at the first report it cannot store; the rest are not acked. A refusal is a
// *connect.Error (invalid_argument: a report the hub will never take; unavailable). Reports
// carried offline (internal/hub/bundleapi) go through here too, after their signature.
func (s *Server) IngestReports(ctx context.Context, cluster string, reports []*agentv1.Report) ([]uint64, error) {
	if n := len(reports); n > maxReportsPerRequest {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%d reports in one request; at most %d", n, maxReportsPerRequest))
	}
	for _, r := range reports {
		if n := len(r.GetStatuses()); n > maxStatusesPerReport {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("report %d: %d statuses; at most %d", r.GetSeq(), n, maxStatusesPerReport))
		}
		for _, st := range r.GetStatuses() {
			if err := checkStatus(st); err != nil {
				s.d.Metrics.ReportsRefused.Inc()
				s.d.Logger.Warn("report refused", "cluster", cluster, "seq", r.GetSeq(), "error", err)
				return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("report %d: %w", r.GetSeq(), err))
			}
		}
	}
	known, err := s.releasesOf(ctx, cluster)
	if err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	if err := known.check(cluster, reports); err != nil {
		s.d.Metrics.ReportsRefused.Inc()
		s.d.Logger.Warn("report refused", "cluster", cluster, "error", err)
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	var acked []uint64
	for _, r := range reports {
		statuses := make([]store.AssignmentStatus, 0, len(r.GetStatuses()))
		for _, st := range r.GetStatuses() {
			if hubclient.Phase(st.GetPhase()) == hubclient.PhaseRemoved {
				continue // audited only: the release no longer has a status on this cluster
			}
			statuses = append(statuses, StatusFromProto(cluster, r, st))
		}
		if n := r.GetCompacted(); n > 0 {
			// Counted, never silent: the cluster view shows how many reports were lost to the
			// agent's bounded outbox.
			if err := s.d.Store.RecordCompacted(ctx, cluster, r.GetSeq(), n); err != nil {
				s.d.Logger.Warn("record compacted reports", "cluster", cluster, "seq", r.GetSeq(), "error", err)
				break
			}
			s.d.Logger.Warn("agent's outbox compacted reports before they could be sent", "cluster", cluster, "compacted", n)
		}
		ingestStart := s.d.Clock.Now()
		duplicate, err := s.d.Store.IngestReport(ctx, cluster, r.GetSeq(), statuses)
		s.d.Metrics.StoreOperations.WithLabelValues("ingest_report").Observe(s.d.Clock.Now().Sub(ingestStart).Seconds())
		if err != nil {
			// Ack what was stored so far; the agent resends the rest.
			s.d.Metrics.Reports.WithLabelValues("failed").Inc()
			s.d.Logger.Warn("ingest report", "cluster", cluster, "seq", r.GetSeq(), "error", err)
			break
		}
		if duplicate {
			s.d.Metrics.Reports.WithLabelValues("duplicate").Inc()
		} else {
			s.d.Metrics.Reports.WithLabelValues("ingested").Inc()
			s.recordReport(ctx, cluster, r, known)
			s.d.Changed()
		}
		acked = append(acked, r.GetSeq())
	}
	return acked, nil
}

// releases are the releases a cluster's stored desired state names, with each assigned
// one's source URL: what its agent may report on. A release that left the cluster (its
// tombstone is in the document, without a URL) still may: a report the agent queued before
// it saw the removal must not be refused, or it would stay at the head of its outbox.
type releases map[string]string

// releasesOf reads the cluster's desired state. A cluster not scheduled yet has none.
func (s *Server) releasesOf(ctx context.Context, cluster string) (releases, error) {
	ds, err := s.d.Store.GetDesiredState(ctx, cluster)
	if errors.Is(err, store.ErrNotFound) {
		return releases{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("desired state of cluster %q: %w", cluster, err)
	}
	set := s.digests.of(ds) // decoded once per desired state, shared with downloads
	if set.err != nil {
		return nil, set.err
	}
	return set.releases, nil
}

// check refuses reports that name a release the cluster's desired state does not: an agent
// reports only on its own assignments, and anything else would be stored and audited
// without bound.
func (k releases) check(cluster string, reports []*agentv1.Report) error {
	for _, r := range reports {
		for _, st := range r.GetStatuses() {
			if _, ok := k[st.GetRelease()]; !ok {
				return fmt.Errorf("report %d: release %q is not in the desired state of cluster %q", r.GetSeq(), st.GetRelease(), cluster)
			}
		}
	}
	return nil
}

// StatusFromProto is one status of a report as the store keeps it.
func StatusFromProto(cluster string, r *agentv1.Report, st *agentv1.AssignmentStatus) store.AssignmentStatus {
	detail, _ := protojson.MarshalOptions{UseProtoNames: false, EmitUnpopulated: false}.Marshal(st)
	return store.AssignmentStatus{
		Cluster:            cluster,
		Release:            st.GetRelease(),
		ObservedGeneration: st.GetGeneration(),
		Revision:           st.GetRevision(),
		Digest:             st.GetDigest(),
		Phase:              st.GetPhase(),
		Health:             st.GetHealth(),
		Objects:            int(st.GetObjects()),
		Drifted:            st.GetDrifted(),
		Conflicts:          len(st.GetConflicts()),
		Error:              strings.TrimSpace(st.GetError()),
		Detail:             detail,
		ReportedAt:         r.GetProducedAt().AsTime(),
	}
}

// recordReport records what one newly ingested report says, status by status (the outcome
// of one check or reconcile of one release), keeping the assignment's audit checkpoint:
//   - phase Removed (the agent pruned a release that left the cluster): a "release.removed"
//     record with what the status says of the removal, and the checkpoint is dropped;
//   - a change, or a state other than the checkpoint's: a full "apply" record;
//   - an unchanged check: nothing, or an "apply.verified" record of the unchanged checks
//     once the checkpoint interval has passed (see audit.Step);
//
// and a "drift.healed" record for a status whose drift the agent corrected. A checkpoint that
// cannot be read or written never hides a check: the status is then recorded in full.
func (s *Server) recordReport(ctx context.Context, cluster string, r *agentv1.Report, urls releases) {
	actor := "agent:" + cluster
	for _, st := range r.GetStatuses() {
		if hubclient.Phase(st.GetPhase()) == hubclient.PhaseRemoved {
			w := s.closeCheckpoint(ctx, cluster, st.GetRelease())
			s.d.Record(ctx, audit.Event{Actor: actor, Action: audit.ActionRemoved, Cluster: cluster, Release: st.GetRelease(), Detail: removedDetail(r, st, w)})
			continue
		}
		c := audit.Check{
			Time: s.d.Clock.Now(), Revision: st.GetRevision(), Digest: st.GetDigest(), Phase: st.GetPhase(), Health: st.GetHealth(),
			Changed: st.GetCreated() > 0 || st.GetConfigured() > 0 || st.GetPruned() > 0 || st.GetDrifted() || len(st.GetDrift()) > 0 ||
				len(st.GetConflicts()) > 0 || strings.TrimSpace(st.GetError()) != "",
		}
		cp, v, w := s.checkpoint(ctx, cluster, st.GetRelease(), c)
		switch v {
		case audit.RecordVerified:
			s.d.Record(ctx, audit.VerifiedEvent(actor, cluster, st.GetRelease(), cp, w))
		case audit.RecordFull:
			d := applyDetail(r, st, urls[st.GetRelease()])
			if w.Count > 0 {
				d["verified"] = w.Detail()
			}
			s.d.Record(ctx, audit.Event{Actor: actor, Action: audit.ActionApply, Cluster: cluster, Release: st.GetRelease(), Detail: d})
		}
		if healed := healedDrift(st); len(healed) > 0 {
			s.d.Record(ctx, audit.Event{Actor: actor, Action: "drift.healed", Cluster: cluster, Release: st.GetRelease(), Detail: map[string]any{
				"revision": st.GetRevision(), "digest": st.GetDigest(), "objects": healed,
			}})
		}
		s.recordAdoption(ctx, actor, cluster, st)
	}
}
