package agentapi

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pki"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// Store is the part of the hub's store the agent endpoint uses.
type Store interface {
	// ConsumeJoinToken uses the token once, or returns store.ErrTokenInvalid.
	ConsumeJoinToken(ctx context.Context, id string, secretHash []byte, cluster string, now time.Time) error
	AddCertificate(ctx context.Context, c store.Certificate) error
	// CertificateValid reports whether the certificate is known and not revoked.
	CertificateValid(ctx context.Context, serial, cluster string) (bool, error)
	// RevokeCertificates revokes the cluster's certificate serial ("": all of them) and says
	// how many were valid.
	RevokeCertificates(ctx context.Context, cluster, serial string) (int64, error)
	ReportStats(ctx context.Context, cluster string) (store.ReportStats, error)
	// GetDesiredState returns the cluster's stored document, or store.ErrNotFound.
	GetDesiredState(ctx context.Context, cluster string) (store.DesiredState, error)
	RecordCompacted(ctx context.Context, cluster string, seq, n uint64) error
	IngestReport(ctx context.Context, cluster string, seq uint64, statuses []store.AssignmentStatus) (duplicate bool, err error)
	TouchClusters(ctx context.Context, touches []store.Touch) error
	// UpdateAuditCheckpoint reads, decides on and stores an assignment's audit checkpoint
	// in one transaction (store.Store's contract).
	UpdateAuditCheckpoint(ctx context.Context, cluster, release string, fn func(cp audit.Checkpoint, ok bool) (next audit.Checkpoint, keep bool, err error)) error
}

// Options bound the agent endpoint. The hub's Options hold their defaults.
type Options struct {
	// CertTTL is the lifetime of the agent certificates Join and Renew sign.
	CertTTL time.Duration
	// AgentQPS and AgentBurst are each cluster's token bucket.
	AgentQPS   float64
	AgentBurst int
	// GlobalQPS and GlobalBurst are the bucket for every authenticated request.
	GlobalQPS   float64
	GlobalBurst int
	// JoinQPS and JoinBurst are the bucket of each client address on the unauthenticated
	// Join (an IPv6 address counts by its /64).
	JoinQPS   float64
	JoinBurst int
	// MaxArtifactDownloads bounds downloads served at once; MaxInflightReports bounds
	// Report calls decoded and ingested at once.
	MaxArtifactDownloads int
	MaxInflightReports   int
	// AuditCheckpoint is how often, at most, an assignment whose checks change nothing gets
	// an "apply.verified" record (audit.Step). Zero: audit.DefaultCheckpointInterval;
	// negative: no checkpoints, every check is a full record.
	AuditCheckpoint time.Duration
}

// Deps are what the agent endpoint needs. All are required except EnsureArtifact, Changed
// and Clock (then the wall clock).
type Deps struct {
	Store     Store
	CA        *pki.CA
	Artifacts *artifact.Store
	// EnsureArtifact fetches an artifact this replica lacks from the other replicas (nil:
	// a single hub, whose artifacts are all local).
	EnsureArtifact func(ctx context.Context, digest string) error
	// Record writes an audit record; it never fails the caller.
	Record func(ctx context.Context, e audit.Event)
	// Changed says the fleet's status changed (a report was ingested).
	Changed  func()
	Watchers *Watchers
	Seen     *LastSeen
	Auth     *Auth
	Metrics  *Metrics
	Clock    clock.Clock
	Logger   *slog.Logger
	// AgeKeys records the clusters' age recipients (nil: they are not recorded).
	AgeKeys AgeKeys
}

// Server is the agent endpoint.
type Server struct {
	d    Deps
	o    Options
	errs *connect.ErrorWriter
	// refused remembers the (cluster, generation) refusals already recorded.
	refused *refusals
	// digests are the clusters' assigned artifact digests, by desired state (artifacts.go).
	digests *digestCache
}

// New returns the agent endpoint.
func New(d Deps, o Options) *Server {
	d.Clock = clock.Or(d.Clock)
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Changed == nil {
		d.Changed = func() {}
	}
	if d.Record == nil {
		d.Record = func(context.Context, audit.Event) {}
	}
	return &Server{d: d, o: o, errs: connect.NewErrorWriter(), refused: newRefusals(), digests: newDigestCache()}
}

// maxMessageBytes bounds every protocol message the hub reads.
const maxMessageBytes = 4 << 20

// compressMinBytes is the smallest message the hub gzips. Most of what an idle agent gets
// (heartbeat and report answers) is a few bytes, which gzip only makes longer, and setting up
// a gzip writer for each was a tenth of an idle hub's CPU.
const compressMinBytes = 1 << 10

// Handler serves the agent endpoint's routes, behind the load limits.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	lim := newLimiter(s.o, s.d.Clock, s.d.Logger, s.d.Metrics)
	handlerOpts := []connect.HandlerOption{connect.WithReadMaxBytes(maxMessageBytes), connect.WithCompressMinBytes(compressMinBytes)}
	// Join, unauthenticated, has its own bucket per client address; the global bucket counts
	// only authenticated requests, so that a flood of joins cannot starve the agents.
	path, handler := agentv1connect.NewJoinServiceHandler(&joinServer{s: s}, handlerOpts...)
	mux.Handle(path, lim.limitJoin(newJoinLimiter(s.o, s.d.Clock), handler))
	path, handler = agentv1connect.NewAgentServiceHandler(&agentServer{s: s}, handlerOpts...)
	mux.Handle(path, s.requireAgent(lim.limitGlobal(lim.limitAgent(lim.limitReports(handler)))))
	mux.Handle("GET /artifacts/sha256/{hex}", s.requireAgent(lim.limitGlobal(lim.limitAgent(lim.limitArtifacts(http.HandlerFunc(s.serveArtifact))))))
	return mux
}

// Ping is how the agent endpoint finds connections that stopped answering: a connection
// from which nothing arrived for Interval gets an HTTP/2 PING, and is closed, ending its
// watch stream, when no answer came within Timeout. Agents PING a connection silent for 30s
// (internal/agent), so that a live agent's connection never needs the hub's.
type Ping struct {
	Interval, Timeout time.Duration
}

// Defaults of Ping: a connection that went silent is closed within a minute of its last frame,
// well inside the two minutes after which a cluster not heard from is unreachable.
const (
	DefaultPingInterval = 45 * time.Second
	DefaultPingTimeout  = 15 * time.Second
)

// Per-connection HTTP/2 buffers of the agent endpoint. A frame read is kept in a buffer of
// its size for the connection's life, so frames are kept at the protocol's minimum (TLS
// records are no larger anyway). The receive windows bound what an agent can make the hub
// hold for a request not read yet (a report waiting for its turn): 10,000 agents at Go's
// default of 1 MiB each would be 10 GiB.
const (
	maxReadFrameBytes    = 16 << 10
	receiveWindowPerConn = 256 << 10
	receiveWindowStream  = 256 << 10
)

// HTTP2 is the agent endpoint's HTTP/2 configuration (http.Server.HTTP2).
func HTTP2(p Ping) *http.HTTP2Config {
	if p.Interval <= 0 {
		p.Interval = DefaultPingInterval
	}
	if p.Timeout <= 0 {
		p.Timeout = DefaultPingTimeout
	}
	return &http.HTTP2Config{
		MaxReadFrameSize:              maxReadFrameBytes,
		MaxReceiveBufferPerConnection: receiveWindowPerConn,
		MaxReceiveBufferPerStream:     receiveWindowStream,
		SendPingTimeout:               p.Interval,
		PingTimeout:                   p.Timeout,
		// A connection that takes nothing written to it for as long is as dead as one that
		// does not answer PINGs.
		WriteByteTimeout: p.Interval + p.Timeout,
	}
}

// TLSConfig is base asking for a client certificate but not requiring one, because Join is
// made before the agent has one; every other route requires it (requireAgent).
func (s *Server) TLSConfig(base *tls.Config) *tls.Config {
	cfg := base.Clone()
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	cfg.ClientCAs = s.d.CA.Pool()
	return cfg
}

type clusterKey struct{}

type serialKey struct{}

// serialFrom returns the serial of the certificate requireAgent authenticated.
func serialFrom(ctx context.Context) string {
	s, _ := ctx.Value(serialKey{}).(string)
	return s
}

// clusterFrom returns the cluster identity requireAgent established for this request.
func clusterFrom(ctx context.Context) string {
	c, _ := ctx.Value(clusterKey{}).(string)
	return c
}

// requireAgent authorises each request from the client certificate: signed by the hub's CA,
// naming a cluster, and not revoked. Both answers are reused for the same certificate
// (Auth): the verification while the certificate is valid, the store's "not revoked" for a
// while, except that removing a cluster forgets its certificates at once, so a removed
// cluster is locked out on its next request, not when its certificate expires.
func (s *Server) requireAgent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			s.deny(w, r, connect.CodeUnauthenticated, "a client certificate is required: join first")
			return
		}
		raw := make([][]byte, len(r.TLS.PeerCertificates))
		for i, c := range r.TLS.PeerCertificates {
			raw[i] = c.Raw
		}
		now := s.d.Clock.Now()
		key := chainKey(raw)
		e, verified, fresh, epoch := s.d.Auth.lookup(key, now)
		if !verified {
			cluster, serial, err := s.d.CA.VerifyAgent(raw, now)
			if err != nil {
				s.deny(w, r, connect.CodeUnauthenticated, err.Error())
				return
			}
			e = authEntry{cluster: cluster, serial: serial, notBefore: s.d.CA.Certificate().NotBefore, notAfter: s.d.CA.Certificate().NotAfter,
				replaces: pki.ReplacedSerial(r.TLS.PeerCertificates[0])}
			for _, c := range r.TLS.PeerCertificates {
				e.notBefore, e.notAfter = latest(e.notBefore, c.NotBefore), earliest(e.notAfter, c.NotAfter)
			}
		}
		if !fresh {
			ok, err := s.d.Store.CertificateValid(r.Context(), e.serial, e.cluster)
			if err != nil {
				s.deny(w, r, connect.CodeUnavailable, "check certificate: "+err.Error())
				return
			}
			if !ok {
				s.deny(w, r, connect.CodePermissionDenied, "cluster "+e.cluster+": certificate revoked or cluster removed")
				return
			}
			if e.replaces != "" {
				// The first use of a renewed certificate revokes the one it replaced.
				if err := s.revokeReplaced(r.Context(), e); err != nil {
					s.deny(w, r, connect.CodeUnavailable, "revoke the replaced certificate: "+err.Error())
					return
				}
				e.replaces = ""
			}
			e.checked = now
			s.d.Auth.put(key, e, epoch)
		}
		s.d.Seen.Touch(e.cluster, "")
		ctx := context.WithValue(context.WithValue(r.Context(), clusterKey{}, e.cluster), serialKey{}, e.serial)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// deny answers with a Connect error, in whichever of the Connect, gRPC or gRPC-Web shapes the
// request used (streams included), so that clients decode the code; plain HTTP clients get
// the status code that goes with it.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, code connect.Code, msg string) {
	_ = s.errs.Write(w, r, connect.NewError(code, errors.New(msg)))
}
