package agentapi

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

type joinServer struct{ s *Server }

func (j *joinServer) Join(ctx context.Context, req *connect.Request[agentv1.JoinRequest]) (*connect.Response[agentv1.JoinResponse], error) {
	s := j.s
	tok, err := pki.ParseJoinToken(req.Msg.GetToken())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	now := s.d.Clock.Now()
	if err := s.d.Store.ConsumeJoinToken(ctx, tok.ID, pki.SecretHash(tok.Secret), tok.Cluster, now); err != nil {
		s.d.Logger.Warn("join refused", "cluster", tok.Cluster, "token", tok.ID, "error", err)
		if errors.Is(err, store.ErrTokenInvalid) {
			return nil, connect.NewError(connect.CodePermissionDenied, fmt.Errorf("cluster %q: %w", tok.Cluster, err))
		}
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	certPEM, serial, notAfter, err := s.d.CA.SignAgentCSR(req.Msg.GetCsrPem(), tok.Cluster, s.o.CertTTL, now)
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	if err := s.d.Store.AddCertificate(ctx, store.Certificate{Serial: serial, Cluster: tok.Cluster, NotAfter: notAfter}); err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	stats, err := s.d.Store.ReportStats(ctx, tok.Cluster)
	if err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	s.d.Seen.Touch(tok.Cluster, req.Msg.GetAgentVersion())
	s.d.Logger.Info("agent joined", "cluster", tok.Cluster, "token", tok.ID, "nextReportSeq", stats.LastSeq+1)
	s.d.Record(ctx, audit.Event{Actor: "agent:" + tok.Cluster, Action: "token.used", Cluster: tok.Cluster, Detail: map[string]any{
		"token": tok.ID, "certificateSerial": serial, "certificateNotAfter": notAfter.UTC(), "agentVersion": req.Msg.GetAgentVersion(), "peer": req.Peer().Addr,
	}})
	return connect.NewResponse(&agentv1.JoinResponse{
		Cluster: tok.Cluster, CertificatePem: certPEM, CaPem: s.d.CA.CertPEM(), NextReportSeq: stats.LastSeq + 1,
	}), nil
}

type agentServer struct{ s *Server }

func (a *agentServer) Renew(ctx context.Context, req *connect.Request[agentv1.RenewRequest]) (*connect.Response[agentv1.RenewResponse], error) {
	s, cluster := a.s, clusterFrom(ctx)
	certPEM, serial, notAfter, err := s.d.CA.SignAgentCSR(req.Msg.GetCsrPem(), cluster, s.o.CertTTL, s.d.Clock.Now())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	if err := s.d.Store.AddCertificate(ctx, store.Certificate{Serial: serial, Cluster: cluster, NotAfter: notAfter}); err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	return connect.NewResponse(&agentv1.RenewResponse{CertificatePem: certPEM}), nil
}
