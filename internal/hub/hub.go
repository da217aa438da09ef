package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"golang.org/x/sync/errgroup"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/agentapi"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/replica"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/source/helmchart"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/userapi"
	"github.com/flotilla/flotilla/internal/notify"
	"github.com/flotilla/flotilla/internal/pki"
	"github.com/flotilla/flotilla/internal/secrets"
)

// Options configure a hub.
type Options struct {
	// DataDir holds the SQLite store, the CA, the admin token, artifacts and Git mirrors.
	DataDir string
	// Fleet is a directory or a Git URL holding the fleet configuration.
	Fleet string
	// FleetBranch is the branch of a Git fleet repository. Default: the remote's HEAD.
	FleetBranch string
	// FleetPath is the directory inside a Git fleet repository. Default: its root.
	FleetPath string
	// AgentAddr and APIAddr are the listen addresses. Default 127.0.0.1:8443 (agents) and
	// 127.0.0.1:8444 (users).
	AgentAddr, APIAddr string
	// Hosts are extra names and addresses for the serving certificate.
	Hosts []string
	// FleetInterval is how often the fleet configuration is re-read. Default 10s.
	FleetInterval time.Duration
	// CertTTL is the lifetime of agent certificates. Default 30 days.
	CertTTL time.Duration
	// AgentQPS and AgentBurst are each cluster's token bucket on the agent endpoint: requests
	// per second sustained, and how many may come at once. Default 20 and 40.
	AgentQPS   float64
	AgentBurst int
	// GlobalQPS and GlobalBurst are the agent endpoint's token bucket for all authenticated
	// requests. Default 2000 and 4000.
	GlobalQPS   float64
	GlobalBurst int
	// JoinQPS and JoinBurst are the token bucket of each client address on the
	// unauthenticated Join. Default 1 and 20.
	JoinQPS   float64
	JoinBurst int
	// APIQPS and APIBurst are each principal's token bucket of changing user API calls
	// (sync, freeze, suspend, rollout actions, plan, tokens). Default 2 and 30.
	APIQPS   float64
	APIBurst int
	// WebhookSecrets are the secrets of the Git providers' webhooks (/hooks/github,
	// /hooks/gitlab, /hooks/generic) by provider; a provider without one is not served.
	WebhookSecrets map[string]string
	// CredentialsConfig is the operator's credentials configuration (source.LoadPolicy):
	// the credentials sources may name, the hosts each may be sent to, and where a source's
	// credentialsFile may lie. Empty: sources name no credentials.
	CredentialsConfig string
	// AllowFileSources are the directories under which file:// sources may lie. Empty: no
	// file sources (the fleet repository given in Fleet is not bound by it).
	AllowFileSources []string
	// VerifyKeys are the public keys (cosign.pub PEM files) OCI sources may name in
	// verify.cosign.publicKeys, by name. Every file must load, or New fails.
	VerifyKeys map[string]string
	// RecoveryRecipients are age recipients (age1...) every Secret `flotilla secret encrypt`
	// writes is encrypted to as well as to the selected clusters: their holders can decrypt
	// and re-encrypt when clusters change (docs/secrets.md). Each must parse, or New fails.
	RecoveryRecipients []string
	// RenderBudget is the platform's default render budget (--render-*): what a release's
	// renders run under unless its Project lowers it. A zero field: the renderer's default.
	RenderBudget v1alpha1.BudgetLimits
	// MaxArtifactDownloads bounds artifact downloads served at once. Default 16.
	MaxArtifactDownloads int
	// MaxInflightReports bounds Report calls decoded and ingested at once, which bounds the
	// memory a report storm takes. Default 64.
	MaxInflightReports int
	// TokenTTL is the lifetime of join tokens. Default 24h.
	TokenTTL time.Duration
	// UnreachableAfter is how long a cluster's agent may stay silent before the cluster is
	// shown as unreachable (never as Ready). Agents heartbeat every 30s by default, so the
	// default of 2m tolerates a few lost heartbeats.
	UnreachableAfter time.Duration
	// AgentPing is how the agent endpoint finds connections that stopped answering (an
	// agent's open watch stream counts as hearing from it, until its connection is closed).
	// Default: agentapi.DefaultPingInterval and DefaultPingTimeout; the interval must be shorter
	// than UnreachableAfter.
	AgentPing agentapi.Ping
	// AuditSink streams every audit record to an HTTP receiver when its URL is set (see
	// audit.SinkOptions; Logger defaults to the hub's).
	AuditSink audit.SinkOptions
	// AuditCheckpoint is how often, at most, an assignment whose checks change nothing gets
	// an "apply.verified" audit record; the checks between only update its checkpoint in the
	// store. Default 1h; negative: no checkpoints, every check is a full record.
	AuditCheckpoint time.Duration
	// Notify configures the evaluation and delivery of the fleet's Notification objects.
	Notify notify.Options
	// OIDC configures sign-in with ID tokens of an OpenID Connect issuer (docs/access.md);
	// no Issuer: none.
	OIDC access.OIDCOptions
	// Replica configures this hub as one of several sharing a PostgreSQL store.
	Replica ReplicaOptions
	// Clock is the hub's time source: leases, last-seen times, join tokens, certificates,
	// notifications. Default: the wall clock.
	Clock   clock.Clock
	Logger  *slog.Logger
	Version string
}

// The defaults of Options, defined once: setDefaults fills them in, and the hub command's
// flags show and take them.
const (
	DefaultAgentAddr     = "127.0.0.1:8443"
	DefaultAPIAddr       = "127.0.0.1:8444"
	DefaultFleetInterval = 10 * time.Second
	DefaultCertTTL       = 30 * 24 * time.Hour
	DefaultTokenTTL      = 24 * time.Hour
	DefaultAgentQPS      = 20.0
	DefaultAgentBurst    = 40
	DefaultGlobalQPS     = 2000.0
	DefaultGlobalBurst   = 4000
	DefaultJoinQPS       = 1.0
	DefaultJoinBurst     = 20
	// UserAPIReadTimeout bounds the reading of a user API request, its body included.
	UserAPIReadTimeout          = 2 * time.Minute
	DefaultMaxArtifactDownloads = 16
	DefaultMaxInflightReports   = 64
	DefaultLeaseTTL             = replica.DefaultLeaseTTL
	// DefaultUnreachableAfter: a cluster whose agent has not been heard from for this long
	// is shown as unreachable, never as Ready.
	DefaultUnreachableAfter = 2 * time.Minute
	// DefaultAuditCheckpoint: an unchanged assignment gets one apply.verified record an hour.
	DefaultAuditCheckpoint = audit.DefaultCheckpointInterval
)

// DefaultOptions are Options with every default filled in (no data dir or fleet).
func DefaultOptions() Options {
	var o Options
	o.setDefaults()
	return o
}

func (o *Options) setDefaults() {
	orDefault(&o.AgentAddr, DefaultAgentAddr)
	orDefault(&o.APIAddr, DefaultAPIAddr)
	orDefault(&o.FleetInterval, DefaultFleetInterval)
	orDefault(&o.CertTTL, DefaultCertTTL)
	orDefault(&o.TokenTTL, DefaultTokenTTL)
	orDefault(&o.UnreachableAfter, DefaultUnreachableAfter)
	orDefault(&o.AgentQPS, DefaultAgentQPS)
	orDefault(&o.AgentBurst, DefaultAgentBurst)
	orDefault(&o.GlobalQPS, DefaultGlobalQPS)
	orDefault(&o.GlobalBurst, DefaultGlobalBurst)
	orDefault(&o.JoinQPS, DefaultJoinQPS)
	orDefault(&o.JoinBurst, DefaultJoinBurst)
	orDefault(&o.MaxArtifactDownloads, DefaultMaxArtifactDownloads)
	orDefault(&o.MaxInflightReports, DefaultMaxInflightReports)
	// A short --unreachable-after (tests, small fleets) shortens the PINGs with it: a dead
	// connection must be closed well before its cluster would be shown unreachable.
	orDefault(&o.AgentPing.Interval, min(agentapi.DefaultPingInterval, o.UnreachableAfter*3/8))
	orDefault(&o.AgentPing.Timeout, min(agentapi.DefaultPingTimeout, o.UnreachableAfter/8))
	if o.AuditCheckpoint == 0 { // negative turns checkpoints off
		o.AuditCheckpoint = DefaultAuditCheckpoint
	}
	o.Notify.SetDefaults()
	orDefault(&o.Replica.LeaseTTL, DefaultLeaseTTL)
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// CheckAgentPing says whether o's agent PINGs fit its UnreachableAfter, with the defaults
// filled in: the hub command refuses such flags as a usage error before it opens anything.
func CheckAgentPing(o Options) error {
	o.setDefaults()
	return checkAgentPing(o)
}

// checkAgentPing: an open watch stream counts as hearing from the agent, so a connection that
// stopped answering must be closed before its cluster would have been unreachable.
func checkAgentPing(o Options) error {
	if p := o.AgentPing; p.Interval+p.Timeout >= o.UnreachableAfter {
		return fmt.Errorf("agent ping interval %v plus agent ping timeout %v must be shorter than unreachable-after %v: a dead connection would keep its cluster reachable",
			p.Interval, p.Timeout, o.UnreachableAfter)
	}
	return nil
}

// orDefault sets *v to def when it is zero or negative: unset, or no valid setting.
func orDefault[T cmp.Ordered](v *T, def T) {
	var zero T
	if *v <= zero {
		*v = def
	}
}

// Hub is a running control plane.
type Hub struct {
	opts       Options
	log        *slog.Logger
	store      store.Store
	audit      *audit.Log // closed when Run returns
	ca         *pki.CA
	artifacts  *artifact.Store
	poller     *source.Poller
	adminToken string            // admin.token's content: the token, or only its hash on a replica that joined
	bootstrap  *access.Bootstrap // what the user API accepts as the admin token
	clock      clock.Clock

	agentLn, apiLn net.Listener
	watchers       *agentapi.Watchers
	metrics        *metrics
	ctrl           *controller.Controller
	seen           *agentapi.LastSeen
	auth           *agentapi.Auth
	agent          *agentapi.Server
	desired        *desired.Cache
	auditSink      *audit.Sink // nil without Options.AuditSink
	notifier       *notify.Runner
	repl           *replica.Replication
	user           *userapi.API // nil until New has bound both listeners
	userHandler    http.Handler // the user-facing APIs on one httpapi.Server (userapi.go)
	helm           *helmchart.Fetcher
	oci            *ociartifact.Fetcher
}

// AdminTokenFile and CAFile are the files the hub writes to its data dir on first start;
// NotifyStateFile is where it keeps what each notification has announced, so that a
// restarted hub neither repeats it nor misses what happened while it was down.
const (
	AdminTokenFile  = "admin.token"
	CAFile          = "ca.crt"
	NotifyStateFile = "notifications.json"
)

// New prepares a hub: opens the store, creates or loads the CA and admin token, and binds
// both listeners (so their addresses are known before Run).
func New(ctx context.Context, opts Options, st store.Store) (*Hub, error) {
	opts.setDefaults()
	if opts.DataDir == "" {
		return nil, errors.New("a data dir is required")
	}
	if opts.Fleet == "" {
		return nil, errors.New("a fleet configuration (directory or Git URL) is required")
	}
	if err := checkAgentPing(opts); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", opts.DataDir, err)
	}
	for _, r := range opts.RecoveryRecipients {
		if err := secrets.CheckRecipient(r); err != nil {
			return nil, fmt.Errorf("recovery recipient: %w", err)
		}
	}
	h := &Hub{opts: opts, log: opts.Logger, store: st, clock: opts.Clock, watchers: agentapi.NewWatchers()}
	var err error
	if h.artifacts, err = artifact.NewStore(filepath.Join(opts.DataDir, "artifacts")); err != nil {
		return nil, err
	}
	if err := h.setupReplication(ctx); err != nil {
		return nil, err
	}
	if h.ca, err = pki.LoadOrCreateCA(opts.DataDir, h.clock.Now()); err != nil {
		return nil, err
	}
	if h.adminToken, err = loadOrCreateToken(filepath.Join(opts.DataDir, AdminTokenFile)); err != nil {
		return nil, err
	}
	if h.bootstrap, err = access.NewBootstrap(h.adminToken); err != nil {
		return nil, err
	}
	if h.audit, err = audit.Open(ctx, filepath.Join(opts.DataDir, "audit.db")); err != nil {
		return nil, err
	}
	policy, err := source.LoadPolicy(opts.CredentialsConfig, opts.AllowFileSources)
	if err != nil {
		_ = h.audit.Close() // already failing: the first error is the one returned
		return nil, err
	}
	po := source.DefaultOptions()
	po.Policy = policy
	h.poller = source.NewPollerWithOptions(filepath.Join(opts.DataDir, "git"), po)
	// Chart sources under the same policy: named credentials, their hosts, no plain HTTP unless
	// the source says insecure.
	h.helm = helmchart.New(helmchart.Options{Policy: policy})
	if h.oci, err = newOCIFetcher(opts, policy); err != nil {
		_ = h.audit.Close() // already failing: the first error is the one returned
		return nil, err
	}
	h.seen = agentapi.NewLastSeen(st, h.clock, h.log)
	h.seen.SetOpenRefresh(agentapi.OpenRefreshFor(opts.UnreachableAfter))
	h.auth = agentapi.NewAuth(agentapi.RevocationTTL)
	h.desired = desired.NewCache()
	h.metrics = newMetrics(h)
	h.agent = h.newAgentAPI()
	if err := h.newController(); err != nil {
		_ = h.audit.Close() // already failing: the first error is the one returned
		return nil, err
	}
	h.notifier = h.newNotifier()
	if err := h.newAuditSink(ctx); err != nil {
		_ = h.audit.Close() // already failing: the first error is the one returned
		return nil, err
	}
	if h.agentLn, err = (&net.ListenConfig{}).Listen(ctx, "tcp", opts.AgentAddr); err != nil {
		_ = h.audit.Close() // already failing: the first error is the one returned
		return nil, fmt.Errorf("agent endpoint %s: %w", opts.AgentAddr, err)
	}
	if h.apiLn, err = (&net.ListenConfig{}).Listen(ctx, "tcp", opts.APIAddr); err != nil {
		h.agentLn.Close()
		_ = h.audit.Close() // already failing: the first error is the one returned
		return nil, fmt.Errorf("API endpoint %s: %w", opts.APIAddr, err)
	}
	if h.user, h.userHandler, err = h.newUserAPIs(ctx); err != nil {
		h.agentLn.Close()
		h.apiLn.Close()
		_ = h.audit.Close() // already failing: the first error is the one returned
		return nil, err
	}
	return h, nil
}

// AgentURL and APIURL are the https URLs of the two endpoints.
func (h *Hub) AgentURL() string { return "https://" + h.agentLn.Addr().String() }
func (h *Hub) APIURL() string   { return "https://" + h.apiLn.Addr().String() }

// AdminToken is the user API's bootstrap bearer token, or "" on a replica that joined a
// shared store: it holds only the token's hash, and the token is in the admin.token of the
// replica that made it.
func (h *Hub) AdminToken() string {
	if access.IsBootstrapHash(h.adminToken) {
		return ""
	}
	return h.adminToken
}

// CAPath is the CA certificate file clients trust.
func (h *Hub) CAPath() string { return filepath.Join(h.opts.DataDir, CAFile) }

// Run serves until ctx ends, then closes the audit log.
func (h *Hub) Run(ctx context.Context) (err error) {
	defer func() { err = errors.Join(err, h.audit.Close()) }()
	cert, err := h.ca.ServingCertificate(h.servingHosts(), 365*24*time.Hour, h.clock.Now())
	if err != nil {
		return err
	}
	// ReadHeaderTimeout: a client that opens a connection and sends nothing holds it for no
	// longer. IdleTimeout closes keep-alive connections without a request in flight (an
	// agent's open watch stream is a request in flight). HTTP2 closes agents' connections that
	// stop answering PINGs, and keeps their buffers small (agentapi.HTTP2).
	agentSrv := &http.Server{Handler: h.agent.Handler(), TLSConfig: h.agent.TLSConfig(serverTLS(cert)), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute, ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelDebug),
		HTTP2: agentapi.HTTP2(h.opts.AgentPing)}
	// The user API's ReadTimeout bounds a whole request, body included: a client that trickles
	// a plan or bundle upload holds a connection no longer (no user API route streams a body).
	apiSrv := &http.Server{Handler: h.userHandler, TLSConfig: serverTLS(cert), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: UserAPIReadTimeout, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelDebug)}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return serve(ctx, agentSrv, h.agentLn) })
	g.Go(func() error { return serve(ctx, apiSrv, h.apiLn) })
	g.Go(func() error { h.ctrl.Run(ctx); return nil })
	g.Go(func() error { h.seen.Run(ctx); return nil })
	g.Go(func() error { h.runReplication(ctx); return nil })
	g.Go(func() error { h.runAuditSink(ctx); return nil })
	g.Go(func() error { h.notifier.Run(ctx); return nil })
	h.log.Info("hub serving", "agents", h.AgentURL(), "api", h.APIURL(), "fleet", source.Redact(h.opts.Fleet))
	return g.Wait()
}

// newController wires the controller to the store, poller, artifacts and replication.
func (h *Hub) newController() error {
	d := controller.Deps{
		Store: h.store, Poller: h.poller, Artifacts: h.artifacts, Lease: h.repl.Lease(),
		ShareArtifact: h.repl.ShareArtifact,
		Record:        h.record,
		DesiredChanged: func(cluster string) {
			h.watchers.Notify(cluster)
			h.dashboardChanged()
		},
		TookOver: h.tookOver,
		Metrics:  h.metrics.controller,
		Clock:    h.clock,
		Logger:   h.log,
	}
	d.OCI = h.oci
	d.Helm = h.helm
	// Rollouts judge reachability as the views do, and announce their events.
	d.LastSeen = func(c store.Cluster) time.Time { t, _ := h.seen.Get(c); return t }
	d.UnreachableAfter = h.opts.UnreachableAfter
	d.RolloutEvent = func(release string, e phase.RolloutEvent) { h.notifier.Rollout(release, e) }
	if h.repl.IsShared() {
		d.Shared = h.repl
		d.PublishView = func() { h.repl.Publish(replica.Event{Kind: replica.EventView}) }
	}
	var err error
	h.ctrl, err = controller.New(d, controller.Options{
		Fleet: h.opts.Fleet, FleetBranch: h.opts.FleetBranch, FleetPath: h.opts.FleetPath,
		FleetInterval: h.opts.FleetInterval, WorkDir: h.opts.DataDir,
		Schedule: h.scheduleOptions(),
	})
	return err
}

// kickController asks for a reschedule soon (a cluster was added, relabelled or removed), by
// whichever replica holds the controller lease.
func (h *Hub) kickController() {
	h.ctrl.Wake()
	h.repl.Publish(replica.Event{Kind: replica.EventClusters})
}

func serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
		_ = srv.Close() // watch streams do not end by themselves
		return nil
	}
}

func (h *Hub) servingHosts() []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	for _, ln := range []net.Listener{h.agentLn, h.apiLn} {
		if host, _, err := net.SplitHostPort(ln.Addr().String()); err == nil && host != "" && host != "::" && host != "0.0.0.0" {
			hosts = append(hosts, host)
		}
	}
	return append(hosts, h.opts.Hosts...)
}

// loadOrCreateToken reads the bootstrap admin token, or writes a new one; a short or empty
// file is refused (access.LoadOrCreateBootstrap).
func loadOrCreateToken(path string) (string, error) { return access.LoadOrCreateBootstrap(path) }
