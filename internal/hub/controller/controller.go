package controller

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/pathpack"
	"github.com/flotilla/flotilla/internal/hub/rollout/fleetstep"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// Store is the part of the hub's store the controller uses.
type Store interface {
	ListClusters(ctx context.Context) ([]store.Cluster, error)
	// GetDesiredState returns the cluster's stored document, or store.ErrNotFound.
	GetDesiredState(ctx context.Context, cluster string) (store.DesiredState, error)
	ListDesiredStates(ctx context.Context) ([]store.DesiredState, error)
	PutDesiredState(ctx context.Context, cluster string, doc []byte) (generation int64, changed bool, err error)
	PutSourceStatus(ctx context.Context, s store.SourceStatus) error
	PutFleetStatus(ctx context.Context, s store.FleetStatus) error
	// ListStatuses returns every assignment status (rollouts read their clusters' health).
	ListStatuses(ctx context.Context) ([]store.AssignmentStatus, error)
	// Records hold rollout states, freezes, suspensions and sync requests (store.Record).
	GetRecord(ctx context.Context, kind, key string) (store.Record, error)
	ListRecords(ctx context.Context, kind string) ([]store.Record, error)
	PutRecord(ctx context.Context, r store.Record, expect int64) (int64, error)
	DeleteRecord(ctx context.Context, kind, key string, expect int64) error
}

// Poller resolves and checks out Git sources (source.Poller).
type Poller interface {
	Resolve(ctx context.Context, g source.Git) (source.Resolved, error)
	Checkout(ctx context.Context, g source.Git, commit, dst string) error
}

// Artifacts is the hub's local artifact store (artifact.Store).
type Artifacts interface {
	PutDir(ctx context.Context, dir string) (digest string, size int64, err error)
	Has(digest string) bool
	GC(keep map[string]bool) (removed []string, err error)
	// PutFiles and Open: the per-path artifacts are packed from the sources' (pathpack).
	PutFiles(ctx context.Context, dir string, names []string) (digest string, size int64, err error)
	Open(digest string) (*os.File, error)
}

// Lease says whether this replica may schedule: always, for a single hub.
type Lease interface {
	Held() bool
	// Changed is signalled whenever Held may have changed.
	Changed() <-chan struct{}
}

// Shared is the store the replicas share (PostgreSQL); nil for a single hub.
type Shared interface {
	DeleteArtifactsExcept(ctx context.Context, keep map[string]bool) (int, error)
	PutSharedFile(ctx context.Context, name string, data []byte) error
	SharedFiles(ctx context.Context, names []string) (map[string][]byte, error)
}

// Metrics are the controller's Prometheus metrics; the hub registers them.
type Metrics struct {
	PollDuration   *prometheus.HistogramVec // by source
	PollErrors     *prometheus.CounterVec   // by source
	Reschedule     prometheus.Histogram
	DesiredUpdates prometheus.Counter
}

// Deps are what the controller needs. Store, Poller, Artifacts and Lease are required.
type Deps struct {
	Store  Store
	Poller Poller
	// Helm and OCI fetch Helm chart and OCI artifact sources; a source of a kind without one
	// is not polled.
	Helm, OCI source.Fetcher
	Artifacts Artifacts
	Lease     Lease
	// Shared, ShareArtifact and PublishView are set on a hub with replicas: the artifacts
	// it packs and the fleet view it computes reach the other replicas through them.
	Shared        Shared
	ShareArtifact func(ctx context.Context, digest string) error
	PublishView   func()
	// Record writes an audit record (fleet and source revisions).
	Record func(ctx context.Context, e audit.Event)
	// LastSeen returns when a cluster's agent was last heard from (agentapi.LastSeen);
	// nil: the store's LastSeen. A rollout passes over, or waits for, a cluster not heard
	// from within UnreachableAfter (default 2m).
	LastSeen         func(store.Cluster) time.Time
	UnreachableAfter time.Duration
	// RolloutEvent is called for every rollout event, after it is audited (notifications).
	RolloutEvent func(release string, e phase.RolloutEvent)

	// DesiredChanged is called for every cluster whose stored desired state changed.
	DesiredChanged func(cluster string)
	// TookOver is called when this replica takes the lease from another, before its first
	// reschedule. The holder before may have stored desired states whose change
	// notifications were still queued when it died; no reschedule here announces them again,
	// since they are already stored, so the replicas' watches must re-read what they serve.
	TookOver func(ctx context.Context)
	Metrics  Metrics
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Options say where the fleet configuration is and how often to read it.
type Options struct {
	// Fleet is a directory or a Git URL; FleetBranch and FleetPath apply to a Git URL.
	Fleet, FleetBranch, FleetPath string
	// FleetInterval is how often the fleet configuration is re-read.
	FleetInterval time.Duration
	// WorkDir holds temporary checkouts.
	WorkDir string
	// Schedule are the platform's settings every schedule applies (the render budget).
	Schedule schedule.Options
}

// retryAfterFailure is how soon a reschedule that changed nothing because of a store failure
// runs again.
const retryAfterFailure = 2 * time.Second

// Controller is the hub's scheduling loop. Run it on every replica: it acts only while its
// replica holds the lease.
type Controller struct {
	d       Deps
	opts    Options
	log     *slog.Logger
	clock   clock.Clock
	trigger chan struct{}

	mu       sync.Mutex
	fleet    *v1alpha1.Fleet // last valid configuration; nil until one loaded
	fleetRev string
	// rejectedCommit is the fleet repository's commit whose configuration was rejected, while
	// it is the newest; "" otherwise.
	rejectedCommit string
	artifacts      map[string]schedule.Artifact // by source name
	problems       []schedule.Problem
	// merged is the fleet polled and scheduled, computed from mergedFrom (the main fleet in
	// force) and the tenants' configurations; tenantProblems are the tenants' errors.
	merged, mergedFrom *v1alpha1.Fleet
	tenantProblems     []schedule.Problem
	// fresh are artifacts packed by a poll whose result is not applied yet: garbage
	// collection must not take them in between.
	fresh        map[string]bool
	freshPending int // PutDir calls under way: GC waits for the next round
	// urgent are sources a webhook named: the next round polls them whatever their interval.
	urgent map[string]bool
	// syncWake is when the pending wake-up for a sync request's expiry fires (run goroutine).
	syncWake time.Time

	relabels relabels

	// Only the run goroutine uses the fields below.
	polled   map[string]time.Time // by source name
	inflight map[string]bool      // sources being polled
	// pollFailed are the sources whose last poll failed.
	pollFailed map[string]bool
	results    chan pollResult
	// fleetCommit is the commit of the last Git fleet read, for the audit record.
	fleetCommit source.Resolved
	// loggedError is the last fleet configuration error logged.
	loggedError string
	// rejected is the last fleet commit that did not load, and why.
	rejected struct {
		commit string
		err    error
	}
	// plan is every cluster's last stored document, by cluster; nil until loaded from the
	// store in this lease term.
	plan map[string]desired.Document
	// broken are the clusters whose stored document does not decode: left out of scheduling.
	broken map[string]bool
	// retryAt is when a reschedule that failed runs again; zero when none failed.
	retryAt time.Time
	// tenants are the Projects' fleet repositories, by project.
	tenants map[string]*tenant
	// rolloutDue is when the rollouts are stepped again by time alone (a bake ends, a
	// deadline passes, a window opens); zero: nothing due. rolloutKeep are the artifacts
	// rollouts pin or may roll back to: garbage collection keeps them.
	rolloutDue  time.Time
	rolloutKeep map[string]bool
	// rollouts steps the releases' rollouts in every reschedule.
	rollouts *fleetstep.Stepper
	// paths packs the artifact of each release path that assignments name (reschedule).
	paths *pathpack.Packer
}

// New returns a controller; call Run.
func New(d Deps, opts Options) (*Controller, error) {
	if d.Store == nil || d.Poller == nil || d.Artifacts == nil || d.Lease == nil {
		return nil, errors.New("controller: Store, Poller, Artifacts and Lease are required")
	}
	d.Clock = clock.Or(d.Clock)
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Record == nil {
		d.Record = func(context.Context, audit.Event) {}
	}
	if d.DesiredChanged == nil {
		d.DesiredChanged = func(string) {}
	}
	if d.ShareArtifact == nil {
		d.ShareArtifact = func(context.Context, string) error { return nil }
	}
	if d.PublishView == nil {
		d.PublishView = func() {}
	}
	if d.Metrics == (Metrics{}) {
		d.Metrics = NewMetrics()
	}
	if opts.FleetInterval <= 0 {
		opts.FleetInterval = 10 * time.Second
	}
	return &Controller{
		d: d, opts: opts, log: d.Logger, clock: d.Clock, trigger: make(chan struct{}, 1),
		artifacts: map[string]schedule.Artifact{}, fresh: map[string]bool{},
		polled: map[string]time.Time{}, inflight: map[string]bool{}, pollFailed: map[string]bool{}, results: make(chan pollResult, 16),
		rollouts: fleetstep.New(fleetstep.Deps{Store: d.Store, LastSeen: d.LastSeen, UnreachableAfter: d.UnreachableAfter,
			Record: d.Record, Notify: d.RolloutEvent, Logger: d.Logger}),
	}, nil
}

// NewMetrics returns unregistered metrics.
func NewMetrics() Metrics {
	return Metrics{
		PollDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flotilla_hub_source_poll_duration_seconds", Help: "Time to poll a source (resolve, and pack a new revision).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 15),
		}, []string{"source"}),
		PollErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flotilla_hub_source_poll_errors_total", Help: "Failed source polls.",
		}, []string{"source"}),
		Reschedule: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "flotilla_hub_reschedule_duration_seconds", Help: "Time to recompute and store every cluster's desired state.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		DesiredUpdates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flotilla_hub_desired_state_updates_total", Help: "Changes of a cluster's desired state (generation bumps).",
		}),
	}
}

// Collectors are the metrics to register.
func (m Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.PollDuration, m.PollErrors, m.Reschedule, m.DesiredUpdates}
}

// View is what the user API and dashboard show of the fleet configuration.
type View struct {
	Fleet    *v1alpha1.Fleet // nil until a configuration loaded
	Revision string
	Problems []schedule.Problem
	// FleetURL is the fleet repository's URL; "" when the fleet is a local directory.
	FleetURL string
	// RejectedCommit is the newest commit of the fleet repository when its configuration was
	// rejected (the one in force is then at Revision); "" otherwise.
	RejectedCommit string
}

// View returns the configuration in force (the main fleet with the tenants' configurations)
// and the last scheduling problems, the tenants' rejected configurations among them. The
// fleet is shared: callers must not modify it.
func (c *Controller) View() View {
	c.mu.Lock()
	defer c.mu.Unlock()
	return View{Fleet: c.scheduledLocked(), Revision: c.fleetRev, Problems: c.problems, FleetURL: c.fleetURL(), RejectedCommit: c.rejectedCommit}
}

// fleetURL is the fleet repository's URL, or "" for a fleet in a local directory.
func (c *Controller) fleetURL() string {
	if st, err := os.Stat(c.opts.Fleet); err == nil && st.IsDir() {
		return ""
	}
	return source.Redact(c.opts.Fleet)
}

// Wake asks this replica's controller for a reschedule soon.
func (c *Controller) Wake() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// Run schedules until ctx ends, while the lease is held.
func (c *Controller) Run(ctx context.Context) {
	var lastFleetCheck time.Time
	lease := c.d.Lease
	for {
		// Only the replica holding the lease reads the fleet, polls and schedules; the others
		// wait to take over. A replica that takes over reloads its plan from the store,
		// re-reads the fleet, polls every source and reschedules at once: what it knew from
		// an earlier term may be stale.
		if !lease.Held() {
			select {
			case <-ctx.Done():
				return
			case <-lease.Changed():
			case <-c.trigger: // a reschedule is the holder's to do
			}
			if lease.Held() {
				lastFleetCheck = time.Time{}
				clear(c.polled)
				c.plan = nil
				if c.d.TookOver != nil {
					c.d.TookOver(ctx)
				}
				c.Wake() // clusters may have changed while no replica held the lease
			}
			continue
		}
		changed := false
		if clock.Since(c.clock, lastFleetCheck) >= c.opts.FleetInterval {
			changed = c.loadFleets(ctx) || changed
			lastFleetCheck = c.clock.Now()
		}
		changed = c.pollSources(ctx) || changed
		select {
		case <-c.trigger:
			changed = true
		default:
		}
		if !c.retryAt.IsZero() && !c.clock.Now().Before(c.retryAt) {
			changed = true
		}
		if c.rolloutsDue() {
			changed = true
		}
		if changed {
			c.reschedule(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.trigger:
			c.Wake() // handled at the top of the next round
		case r := <-c.results:
			// A poll finished: apply it now rather than at the next tick.
			delete(c.inflight, r.source.Metadata.Name)
			if c.applyPoll(ctx, r) {
				c.Wake()
			}
		case <-lease.Changed(): // lost: stop at the top of the next round
		case <-c.clock.After(500 * time.Millisecond):
		}
	}
}
