package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/sync/errgroup"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/dashboard"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pki"
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
	// GlobalQPS and GlobalBurst are the agent endpoint's token bucket for all requests,
	// Join included. Default 2000 and 4000.
	GlobalQPS   float64
	GlobalBurst int
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
	// AuditSink streams every audit record to an HTTP receiver when its URL is set (see
	// audit.SinkOptions; Logger defaults to the hub's).
	AuditSink audit.SinkOptions
	// Notify configures the evaluation and delivery of the fleet's Notification objects.
	Notify NotifyOptions
	// Replica configures this hub as one of several sharing a PostgreSQL store.
	Replica ReplicaOptions
	Logger  *slog.Logger
	Version string
}

func (o *Options) setDefaults() {
	if o.AgentAddr == "" {
		o.AgentAddr = "127.0.0.1:8443"
	}
	if o.APIAddr == "" {
		o.APIAddr = "127.0.0.1:8444"
	}
	if o.FleetInterval <= 0 {
		o.FleetInterval = 10 * time.Second
	}
	if o.CertTTL <= 0 {
		o.CertTTL = 30 * 24 * time.Hour
	}
	if o.TokenTTL <= 0 {
		o.TokenTTL = 24 * time.Hour
	}
	if o.UnreachableAfter <= 0 {
		o.UnreachableAfter = DefaultUnreachableAfter
	}
	if o.AgentQPS <= 0 {
		o.AgentQPS = 20
	}
	if o.AgentBurst <= 0 {
		o.AgentBurst = 40
	}
	if o.GlobalQPS <= 0 {
		o.GlobalQPS = 2000
	}
	if o.GlobalBurst <= 0 {
		o.GlobalBurst = 4000
	}
	if o.MaxArtifactDownloads <= 0 {
		o.MaxArtifactDownloads = 16
	}
	if o.MaxInflightReports <= 0 {
		o.MaxInflightReports = 64
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
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
	adminToken string
	now        func() time.Time

	agentLn, apiLn net.Listener
	watchers       *watchers
	metrics        *metrics
	errs           *connect.ErrorWriter
	ctrl           *controller
	seen           *lastSeen
	auth           *agentAuth
	desired        *desiredCache
	auditSink      *audit.Sink // nil without Options.AuditSink
	notifier       *notifier
	repl           replication
	dash           *dashboard.Snapshots // the dashboard's fleet document; set by dashboardAPI
}

// AdminTokenFile and CAFile are the files the hub writes to its data dir on first start.
const (
	AdminTokenFile = "admin.token"
	CAFile         = "ca.crt"
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
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", opts.DataDir, err)
	}
	h := &Hub{opts: opts, log: opts.Logger, store: st, now: time.Now, watchers: newWatchers(), errs: connect.NewErrorWriter()}
	if err := h.setupReplication(ctx); err != nil {
		return nil, err
	}
	var err error
	if h.ca, err = pki.LoadOrCreateCA(opts.DataDir, h.now()); err != nil {
		return nil, err
	}
	if h.adminToken, err = loadOrCreateToken(filepath.Join(opts.DataDir, AdminTokenFile)); err != nil {
		return nil, err
	}
	if h.artifacts, err = artifact.NewStore(filepath.Join(opts.DataDir, "artifacts")); err != nil {
		return nil, err
	}
	if h.audit, err = audit.Open(ctx, filepath.Join(opts.DataDir, "audit.db")); err != nil {
		return nil, err
	}
	h.poller = source.NewPoller(filepath.Join(opts.DataDir, "git"))
	h.seen = newLastSeen(st, h.log)
	h.auth = newAgentAuth(revocationTTL)
	h.desired = newDesiredCache()
	h.metrics = newMetrics(h)
	h.ctrl = newController(h)
	h.notifier = newNotifier(h)
	if err := h.newAuditSink(ctx); err != nil {
		h.audit.Close()
		return nil, err
	}
	if h.agentLn, err = net.Listen("tcp", opts.AgentAddr); err != nil {
		h.audit.Close()
		return nil, fmt.Errorf("agent endpoint %s: %w", opts.AgentAddr, err)
	}
	if h.apiLn, err = net.Listen("tcp", opts.APIAddr); err != nil {
		h.agentLn.Close()
		h.audit.Close()
		return nil, fmt.Errorf("API endpoint %s: %w", opts.APIAddr, err)
	}
	return h, nil
}

// AgentURL and APIURL are the https URLs of the two endpoints.
func (h *Hub) AgentURL() string { return "https://" + h.agentLn.Addr().String() }
func (h *Hub) APIURL() string   { return "https://" + h.apiLn.Addr().String() }

// AdminToken is the user API's bearer token.
func (h *Hub) AdminToken() string { return h.adminToken }

// CAPath is the CA certificate file clients trust.
func (h *Hub) CAPath() string { return filepath.Join(h.opts.DataDir, CAFile) }

// Run serves until ctx ends, then closes the audit log.
func (h *Hub) Run(ctx context.Context) error {
	defer h.audit.Close()
	cert, err := h.ca.ServingCertificate(h.servingHosts(), 365*24*time.Hour, h.now())
	if err != nil {
		return err
	}
	agentSrv := &http.Server{Handler: h.agentHandler(), TLSConfig: h.agentTLS(cert), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelDebug)}
	apiSrv := &http.Server{Handler: h.apiHandler(), TLSConfig: serverTLS(cert), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelDebug)}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return serve(ctx, agentSrv, h.agentLn) })
	g.Go(func() error { return serve(ctx, apiSrv, h.apiLn) })
	g.Go(func() error { h.ctrl.run(ctx); return nil })
	g.Go(func() error { h.seen.run(ctx); return nil })
	h.runReplication(ctx, g)
	g.Go(func() error { h.runAuditSink(ctx); return nil })
	g.Go(func() error { h.notifier.run(ctx); return nil })
	h.log.Info("hub serving", "agents", h.AgentURL(), "api", h.APIURL(), "fleet", h.opts.Fleet)
	return g.Wait()
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
		srv.Close() // watch streams do not end by themselves
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

func loadOrCreateToken(path string) (string, error) {
	if data, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(data)), nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b)
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write admin token %s: %w", path, err)
	}
	return tok, nil
}
