package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// maxMessageBytes bounds every protocol message the hub reads.
const maxMessageBytes = 4 << 20

// compressMinBytes is the smallest message the hub gzips. Most of what an idle agent gets
// (heartbeat and report answers) is a few bytes, which gzip only makes longer, and setting up
// a gzip writer for each was a tenth of an idle hub's CPU.
const compressMinBytes = 1 << 10

func (h *Hub) agentHandler() http.Handler {
	mux := http.NewServeMux()
	lim := newLimiter(h.opts, h.now)
	handlerOpts := []connect.HandlerOption{connect.WithReadMaxBytes(maxMessageBytes), connect.WithCompressMinBytes(compressMinBytes)}
	path, handler := agentv1connect.NewJoinServiceHandler(&joinServer{h: h}, handlerOpts...)
	mux.Handle(path, handler)
	path, handler = agentv1connect.NewAgentServiceHandler(&agentServer{h: h}, handlerOpts...)
	mux.Handle(path, h.requireAgent(lim.limitAgent(lim.limitReports(handler))))
	mux.Handle("GET /artifacts/sha256/{hex}", h.requireAgent(lim.limitAgent(lim.limitArtifacts(http.HandlerFunc(h.serveArtifact)))))
	return lim.limitGlobal(mux)
}

type joinServer struct{ h *Hub }

func (s *joinServer) Join(ctx context.Context, req *connect.Request[agentv1.JoinRequest]) (*connect.Response[agentv1.JoinResponse], error) {
	h := s.h
	tok, err := pki.ParseJoinToken(req.Msg.GetToken())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	now := h.now()
	if err := h.store.ConsumeJoinToken(ctx, tok.ID, pki.SecretHash(tok.Secret), tok.Cluster, now); err != nil {
		h.log.Warn("join refused", "cluster", tok.Cluster, "token", tok.ID, "error", err)
		if errors.Is(err, store.ErrTokenInvalid) {
			return nil, connect.NewError(connect.CodePermissionDenied, fmt.Errorf("cluster %q: %w", tok.Cluster, err))
		}
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	certPEM, serial, notAfter, err := h.ca.SignAgentCSR(req.Msg.GetCsrPem(), tok.Cluster, h.opts.CertTTL, now)
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	if err := h.store.AddCertificate(ctx, store.Certificate{Serial: serial, Cluster: tok.Cluster, NotAfter: notAfter}); err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	stats, err := h.store.ReportStats(ctx, tok.Cluster)
	if err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	h.seen.touch(tok.Cluster, req.Msg.GetAgentVersion())
	h.log.Info("agent joined", "cluster", tok.Cluster, "token", tok.ID, "nextReportSeq", stats.LastSeq+1)
	h.record(ctx, audit.Event{Actor: "agent:" + tok.Cluster, Action: "token.used", Cluster: tok.Cluster, Detail: map[string]any{
		"token": tok.ID, "certificateSerial": serial, "certificateNotAfter": notAfter.UTC(), "agentVersion": req.Msg.GetAgentVersion(), "peer": req.Peer().Addr,
	}})
	return connect.NewResponse(&agentv1.JoinResponse{
		Cluster: tok.Cluster, CertificatePem: certPEM, CaPem: h.ca.CertPEM(), NextReportSeq: stats.LastSeq + 1,
	}), nil
}

type agentServer struct{ h *Hub }

func (s *agentServer) Renew(ctx context.Context, req *connect.Request[agentv1.RenewRequest]) (*connect.Response[agentv1.RenewResponse], error) {
	h, cluster := s.h, clusterFrom(ctx)
	certPEM, serial, notAfter, err := h.ca.SignAgentCSR(req.Msg.GetCsrPem(), cluster, h.opts.CertTTL, h.now())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	if err := h.store.AddCertificate(ctx, store.Certificate{Serial: serial, Cluster: cluster, NotAfter: notAfter}); err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	return connect.NewResponse(&agentv1.RenewResponse{CertificatePem: certPEM}), nil
}

// Watch sends the cluster's desired state whenever its generation differs from the last one
// the agent has, starting with known_generation: a reconnecting agent that is up to date
// receives nothing until something changes.
func (s *agentServer) Watch(ctx context.Context, req *connect.Request[agentv1.WatchRequest], stream *connect.ServerStream[agentv1.WatchResponse]) error {
	h, cluster := s.h, clusterFrom(ctx)
	changes, cancel := h.watchers.subscribe(cluster)
	defer cancel()
	h.seen.touch(cluster, req.Msg.GetAgentVersion())
	known := req.Msg.GetKnownGeneration()
	for {
		ds, err := h.store.GetDesiredState(ctx, cluster)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Not scheduled yet: the controller will notify.
		case err != nil:
			return connect.NewError(connect.CodeUnavailable, err)
		case ds.Generation != known:
			msg, err := desiredToProto(ds)
			if err != nil {
				return connect.NewError(connect.CodeInternal, err)
			}
			if err := stream.Send(&agentv1.WatchResponse{Desired: msg}); err != nil {
				return err
			}
			known = ds.Generation
		}
		select {
		case <-ctx.Done():
			return nil
		case _, open := <-changes:
			if !open {
				return connect.NewError(connect.CodePermissionDenied, fmt.Errorf("cluster %q was removed", cluster))
			}
		}
	}
}

func desiredToProto(ds store.DesiredState) (*agentv1.DesiredState, error) {
	doc, err := schedule.DecodeDocument(ds.Document)
	if err != nil {
		return nil, fmt.Errorf("desired state of cluster %q: %w", ds.Cluster, err)
	}
	out := &agentv1.DesiredState{Cluster: ds.Cluster, Generation: ds.Generation, ExplicitRemovals: true}
	for _, t := range doc.Removed {
		out.Removed = append(out.Removed, &agentv1.Tombstone{
			Release: t.Release, Reason: t.Reason, FleetRevision: t.FleetRevision, Revision: t.Revision, Digest: t.Digest,
		})
	}
	for _, a := range doc.Assignments {
		out.Assignments = append(out.Assignments, &agentv1.Assignment{
			Release: a.Release, Source: a.Source, Url: a.URL, Revision: a.Revision, Digest: a.Digest,
			Path: a.Path, Namespace: a.Namespace, CreateNamespace: a.CreateNamespace,
			Prune: a.Prune, SelfHeal: a.SelfHeal, Wait: a.Wait,
			TimeoutSeconds: int64(a.Timeout / time.Second), IntervalSeconds: int64(a.Interval / time.Second),
			Vars: a.Vars,
		})
	}
	return out, nil
}

// maxReportsPerRequest bounds one Report call; agents send batches of at most 100.
const maxReportsPerRequest = 500

// maxStatusesPerReport bounds one report; agents put one status in each.
const maxStatusesPerReport = 1000

func (s *agentServer) Report(ctx context.Context, req *connect.Request[agentv1.ReportRequest]) (*connect.Response[agentv1.ReportResponse], error) {
	h, cluster := s.h, clusterFrom(ctx)
	if n := len(req.Msg.GetReports()); n > maxReportsPerRequest {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%d reports in one request; at most %d", n, maxReportsPerRequest))
	}
	for _, r := range req.Msg.GetReports() {
		if n := len(r.GetStatuses()); n > maxStatusesPerReport {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("report %d: %d statuses; at most %d", r.GetSeq(), n, maxStatusesPerReport))
		}
	}
	resp := &agentv1.ReportResponse{}
	urls := &sourceURLs{h: h, cluster: cluster}
	for _, r := range req.Msg.GetReports() {
		statuses := make([]store.AssignmentStatus, 0, len(r.GetStatuses()))
		for _, st := range r.GetStatuses() {
			statuses = append(statuses, statusFromProto(cluster, r, st))
		}
		if n := r.GetCompacted(); n > 0 {
			// Counted, never silent: the cluster view shows how many reports were lost to the
			// agent's bounded outbox.
			if err := h.store.RecordCompacted(ctx, cluster, r.GetSeq(), n); err != nil {
				h.log.Warn("record compacted reports", "cluster", cluster, "seq", r.GetSeq(), "error", err)
				break
			}
			h.log.Warn("agent's outbox compacted reports before they could be sent", "cluster", cluster, "compacted", n)
		}
		ingestStart := time.Now()
		duplicate, err := h.store.IngestReport(ctx, cluster, r.GetSeq(), statuses)
		h.metrics.observeStore("ingest_report", ingestStart)
		if err != nil {
			// Ack what was stored so far; the agent resends the rest.
			h.metrics.reports.WithLabelValues("failed").Inc()
			h.log.Warn("ingest report", "cluster", cluster, "seq", r.GetSeq(), "error", err)
			break
		}
		if duplicate {
			h.metrics.reports.WithLabelValues("duplicate").Inc()
		} else {
			h.metrics.reports.WithLabelValues("ingested").Inc()
			h.recordReport(ctx, cluster, r, urls)
			h.dashboardChanged()
		}
		resp.Acked = append(resp.Acked, r.GetSeq())
	}
	return connect.NewResponse(resp), nil
}

func (s *agentServer) Heartbeat(ctx context.Context, req *connect.Request[agentv1.HeartbeatRequest]) (*connect.Response[agentv1.HeartbeatResponse], error) {
	s.h.seen.heartbeat(clusterFrom(ctx), req.Msg.GetAgentVersion(), int(req.Msg.GetOutboxDepth()))
	return connect.NewResponse(&agentv1.HeartbeatResponse{}), nil
}

// serveArtifact serves an artifact by digest, only to an agent whose desired state refers
// to it. Plain GET with ETag and Range (http.ServeContent), so any HTTP cache can serve it too.
func (h *Hub) serveArtifact(w http.ResponseWriter, r *http.Request) {
	cluster := clusterFrom(r.Context())
	digest := "sha256:" + r.PathValue("hex")
	ds, err := h.store.GetDesiredState(r.Context(), cluster)
	if err != nil || !referencesDigest(ds, digest) {
		http.Error(w, fmt.Sprintf("artifact %s is not assigned to cluster %q", digest, cluster), http.StatusForbidden)
		return
	}
	if err := h.ensureArtifact(r.Context(), digest); err != nil {
		h.log.Warn("artifact not fetched from the shared store", "digest", digest, "error", err)
	}
	f, err := h.artifacts.Open(digest)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, os.ErrNotExist) {
			status = http.StatusNotFound
		}
		http.Error(w, err.Error(), status)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("ETag", `"`+digest+`"`)
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	w.Header().Set("Content-Type", "application/gzip")
	http.ServeContent(countingWriter{ResponseWriter: w, n: &h.metrics.artifactBytes}, r, "", st.ModTime(), f)
}

func referencesDigest(ds store.DesiredState, digest string) bool {
	assignments, err := schedule.Decode(ds.Document)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(assignments, func(a schedule.Assignment) bool { return a.Digest == digest })
}

func statusFromProto(cluster string, r *agentv1.Report, st *agentv1.AssignmentStatus) store.AssignmentStatus {
	detail, _ := protoJSON(st)
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
