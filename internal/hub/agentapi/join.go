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
	// A join that fails by the client's fault is charged to its address (joinlimit.go); the
	// store failing is not the client's.
	tok, err := pki.ParseJoinToken(req.Msg.GetToken())
	if err != nil {
		joinFailed(ctx)
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	if err := checkAgeRecipient(req.Msg.GetAgeRecipient()); err != nil {
		joinFailed(ctx)
		return nil, err // before the token is used up
	}
	now := s.d.Clock.Now()
	if err := s.d.Store.ConsumeJoinToken(ctx, tok.ID, pki.SecretHash(tok.Secret), tok.Cluster, now); err != nil {
		s.d.Logger.Warn("join refused", "cluster", tok.Cluster, "token", tok.ID, "error", err)
		if errors.Is(err, store.ErrTokenInvalid) {
			joinFailed(ctx)
			return nil, connect.NewError(connect.CodePermissionDenied, fmt.Errorf("cluster %q: %w", tok.Cluster, err))
		}
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	certPEM, serial, notAfter, err := s.d.CA.SignAgentCSR(req.Msg.GetCsrPem(), tok.Cluster, s.o.CertTTL, now)
	if err != nil {
		joinFailed(ctx)
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
	_ = s.observeAgeKey(ctx, tok.Cluster, req.Msg.GetAgeRecipient()) // checked above
	s.d.Logger.Info("agent joined", "cluster", tok.Cluster, "token", tok.ID, "nextReportSeq", stats.LastSeq+1)
	s.d.Record(ctx, audit.Event{Actor: "agent:" + tok.Cluster, Action: "token.used", Cluster: tok.Cluster, Detail: map[string]any{
		"token": tok.ID, "certificateSerial": serial, "certificateNotAfter": notAfter.UTC(), "agentVersion": req.Msg.GetAgentVersion(), "peer": req.Peer().Addr,
	}})
	return connect.NewResponse(&agentv1.JoinResponse{
		Cluster: tok.Cluster, CertificatePem: certPEM, CaPem: s.d.CA.CertPEM(), NextReportSeq: stats.LastSeq + 1,
	}), nil
}

type agentServer struct{ s *Server }

// Renew signs a new certificate that names the one presented as the one it replaces. The
// replaced serial is revoked when the agent first presents the new certificate
// (requireAgent): an agent whose renewal answer was lost still holds a valid certificate
// and renews again.
func (a *agentServer) Renew(ctx context.Context, req *connect.Request[agentv1.RenewRequest]) (*connect.Response[agentv1.RenewResponse], error) {
	s, cluster, old := a.s, clusterFrom(ctx), serialFrom(ctx)
	certPEM, serial, notAfter, err := s.d.CA.SignAgentRenewal(req.Msg.GetCsrPem(), cluster, old, s.o.CertTTL, s.d.Clock.Now())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	if err := s.d.Store.AddCertificate(ctx, store.Certificate{Serial: serial, Cluster: cluster, NotAfter: notAfter}); err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	s.d.Logger.Info("agent certificate renewed", "cluster", cluster, "serial", serial, "replaces", old)
	s.d.Record(ctx, audit.Event{Actor: "agent:" + cluster, Action: "certificate.renewed", Cluster: cluster, Detail: map[string]any{
		"certificateSerial": serial, "certificateNotAfter": notAfter.UTC(), "replaces": old,
	}})
	return connect.NewResponse(&agentv1.RenewResponse{CertificatePem: certPEM}), nil
}

// revokeReplaced revokes the certificate e's renewed certificate replaced, the first time
// the new one is presented.
func (s *Server) revokeReplaced(ctx context.Context, e authEntry) error {
	n, err := s.d.Store.RevokeCertificates(ctx, e.cluster, e.replaces)
	if err != nil || n == 0 {
		return err // n == 0: revoked already, by this or another replica, or at a restart
	}
	s.d.Auth.ForgetSerial(e.replaces)
	s.d.Logger.Info("replaced agent certificate revoked", "cluster", e.cluster, "serial", e.replaces, "replacedBy", e.serial)
	s.d.Record(ctx, audit.Event{Actor: "agent:" + e.cluster, Action: "certificate.revoked", Cluster: e.cluster, Detail: map[string]any{
		"certificateSerial": e.replaces, "reason": "renewed", "replacedBy": e.serial,
	}})
	return nil
}
