package userapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"golang.org/x/time/rate"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/dashboard"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/keyrate"
)

// Store is the part of the hub's store the user API uses.
type Store interface {
	// AddCluster registers c; store.ErrExists if the name is taken.
	AddCluster(ctx context.Context, c store.Cluster) error
	// GetCluster returns the named cluster or store.ErrNotFound.
	GetCluster(ctx context.Context, name string) (store.Cluster, error)
	// ListClusters returns every cluster, ordered by name.
	ListClusters(ctx context.Context) ([]store.Cluster, error)
	// SetClusterLabels replaces the cluster's labels; store.ErrNotFound if it does not exist.
	SetClusterLabels(ctx context.Context, name string, labels map[string]string) error
	// RemoveCluster deletes the cluster and revokes its certificates; store.ErrNotFound if
	// it does not exist.
	RemoveCluster(ctx context.Context, name string) error
	CreateJoinToken(ctx context.Context, t store.JoinToken) error
	// RevokeCertificates revokes the cluster's certificate serial, or all for serial "".
	RevokeCertificates(ctx context.Context, cluster, serial string) (int64, error)
	// RevokeJoinTokens makes the cluster's unused join tokens expire at now.
	RevokeJoinTokens(ctx context.Context, cluster string, now time.Time) (int64, error)
	ReportStats(ctx context.Context, cluster string) (store.ReportStats, error)
	// GetDesiredState returns the cluster's desired state, or store.ErrNotFound.
	GetDesiredState(ctx context.Context, cluster string) (store.DesiredState, error)
	// ListDesiredStates returns every stored desired state, ordered by cluster.
	ListDesiredStates(ctx context.Context) ([]store.DesiredState, error)
	ListStatuses(ctx context.Context) ([]store.AssignmentStatus, error)
	// ListSourceStatuses returns every source status, ordered by name.
	ListSourceStatuses(ctx context.Context) ([]store.SourceStatus, error)
	GetFleetStatus(ctx context.Context) (store.FleetStatus, error)
	// GetRecord reads a record (a cluster's age recipient).
	GetRecord(ctx context.Context, kind, key string) (store.Record, error)
	// DeleteRecord deletes a record (a removed cluster's suspension).
	DeleteRecord(ctx context.Context, kind, key string, expect int64) error
}

// Seen is where the agents' last-seen times and outbox depths are kept (agentapi.LastSeen).
type Seen interface {
	// Get returns when c's agent was last heard from and its version.
	Get(c store.Cluster) (time.Time, string)
	// OutboxDepth returns the depth the agent last reported, if it did.
	OutboxDepth(cluster string) (int, bool)
}

// AuditLog is the audit log the audit endpoints read (audit.Log).
type AuditLog interface {
	List(ctx context.Context, f audit.Filter) ([]audit.Record, error)
	ExportJSONL(ctx context.Context, w io.Writer, f audit.Filter) error
	Verify(ctx context.Context) (checked int64, err error)
	Head(ctx context.Context) (seq int64, hash string, err error)
}

// Deps are what the user API needs. All are required except Audit (then the audit endpoints
// answer 503), Record, ClustersChanged, ClusterRelabelled, ClusterRemoved, Clock (then the wall clock),
// Logger, Tokens and Device.
type Deps struct {
	Store   Store
	Seen    Seen
	Desired *desired.Cache
	// View is the controller's view: the fleet configuration in force and its problems.
	View  func() controller.View
	Audit AuditLog
	// Record writes an audit record; it never fails the caller.
	Record func(ctx context.Context, e audit.Event)
	// ClustersChanged follows a change to the cluster list or labels (reschedule soon).
	ClustersChanged func()
	// ClusterRelabelled says who changed a cluster's labels, before ClustersChanged: the
	// releases the change removes from the cluster are attributed to them.
	ClusterRelabelled func(cluster, actor string)
	// ClusterRemoved follows the removal of a cluster from the store: its certificates are
	// revoked there, and what the hub keeps of it in memory (open streams, last-seen time)
	// goes.
	ClusterRemoved func(name string)
	// CertificatesRevoked follows the revocation of every certificate of a cluster that stays
	// (cluster rotate): cached certificate checks and open streams end.
	CertificatesRevoked func(name string)
	Clock               clock.Clock
	Logger              *slog.Logger
	// Tokens are the named user tokens; nil: the token endpoints answer 503.
	Tokens TokenStore
	// Device runs the OIDC device flow for the dashboard; nil: no OIDC sign-in.
	Device DeviceFlow
}

// Options are the user API's settings. The hub's Options hold their defaults.
type Options struct {
	// OIDCIssuer and OIDCClientID are what `flotilla login` reads from the hub to sign in
	// with the device flow; "" without OIDC sign-in.
	OIDCIssuer, OIDCClientID string
	OIDCScopes               []string
	// AgentURL is the agent endpoint, for the command a join token comes with.
	AgentURL string
	// CAFingerprint is the CA's fingerprint, which join tokens pin.
	CAFingerprint string
	// TokenTTL is the lifetime of join tokens.
	TokenTTL time.Duration
	// UnreachableAfter is how long an agent may stay silent before its cluster is shown as
	// unreachable.
	UnreachableAfter time.Duration
}

// API is the user API.
type API struct {
	d           Deps
	o           Options
	deviceLimit *rate.Limiter                  // the unauthenticated sign-in calls
	deviceAddrs *keyrate.Buckets[netip.Prefix] // and per client address (ratelimit.go)
	dash        *dashboard.Snapshots           // the dashboard's fleet document of the whole fleet
	scoped      scopedDocs                     // and of scoped principals
}

// New returns the user API.
func New(d Deps, o Options) *API {
	d.Clock = clock.Or(d.Clock)
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Record == nil {
		d.Record = func(context.Context, audit.Event) {}
	}
	if d.ClustersChanged == nil {
		d.ClustersChanged = func() {}
	}
	if d.ClusterRelabelled == nil {
		d.ClusterRelabelled = func(string, string) {}
	}
	if d.ClusterRemoved == nil {
		d.ClusterRemoved = func(string) {}
	}
	if d.CertificatesRevoked == nil {
		d.CertificatesRevoked = func(string) {}
	}
	api := &API{d: d, o: o, deviceLimit: newDeviceLimit(), deviceAddrs: newDeviceAddrs(d.Clock)}
	api.dash = dashboard.NewSnapshots(func(ctx context.Context) (any, error) {
		return api.dashboardFleet(httpapi.WithScope(ctx, access.Everything()))
	}, dashboard.SnapshotOptions{Now: d.Clock.Now})
	return api
}

// Public are the routes served without a bearer token, by pattern: what `flotilla login` and
// the dashboard's sign-in need before they hold a token, and the dashboard's pages
// everywhere else (they hold no fleet data; they read it from /api/ with the same token).
func (api *API) Public() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /api/v1/login":               http.HandlerFunc(api.loginInfo),
		"POST /api/v1/login/device":       http.HandlerFunc(api.startDeviceLogin),
		"POST /api/v1/login/device/token": http.HandlerFunc(api.pollDeviceLogin),
		"/":                               api.dashboardPages(),
	}
}

// clustersChanged follows a change to the cluster list or labels: the controller reschedules,
// and the dashboard refreshes even when no assignment moves (it shows labels and clusters).
func (api *API) clustersChanged() {
	api.d.ClustersChanged()
	api.DashboardChanged()
}

// reachable reports whether an agent last seen at seen counts as reachable now: heard from
// within Options.UnreachableAfter. A zero seen (never heard from) is not reachable.
func (api *API) reachable(seen time.Time) bool {
	return !seen.IsZero() && clock.Since(api.d.Clock, seen) < api.o.UnreachableAfter
}
