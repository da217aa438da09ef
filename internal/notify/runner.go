package notify

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// Options configure the evaluation and delivery of the fleet's Notification objects.
type Options struct {
	// Interval between evaluations of the fleet's status. Default DefaultInterval.
	Interval time.Duration
	// FlapWindow holds back an event for an assignment that was announced in the same
	// condition less than this long ago. Default DefaultFlapWindow.
	FlapWindow time.Duration
	// Sender configures delivery retries.
	Sender SenderOptions
}

// Defaults of Options.
const (
	DefaultInterval   = 5 * time.Second
	DefaultFlapWindow = 5 * time.Minute
)

// SetDefaults fills in the zero (or negative) fields.
func (o *Options) SetDefaults() {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.FlapWindow <= 0 {
		o.FlapWindow = DefaultFlapWindow
	}
}

// Deps are what a Runner reads of the hub. The functions are called from the Runner's own
// goroutine, one at a time.
type Deps struct {
	// Leader reports whether this replica notifies: of several sharing a store, only the
	// one that runs the controller does, so that each transition is announced once.
	Leader func() bool
	// Fleet returns the fleet configuration in force; nil before one is loaded.
	Fleet func() *v1alpha1.Fleet
	// Status returns the fleet's status as the status view shows it.
	Status func(ctx context.Context) (hubclient.StatusView, error)
	// ClusterLabels returns the labels of every registered cluster, by name.
	ClusterLabels func(ctx context.Context) (map[string]map[string]string, error)
	// StateFile is where the Runner keeps what each notification has announced, so that a
	// restarted hub neither repeats it nor misses what happened while it was down.
	StateFile string
	// UnreachableAfter is how long the hub waits to hear from an agent before it shows its
	// cluster unreachable: agents need that long to reconnect to a restarted hub, so
	// reachability is judged only once a Runner has run that long.
	UnreachableAfter time.Duration
	Clock            clock.Clock
	Logger           *slog.Logger
}

// queueSize bounds the messages waiting for delivery per notification; beyond it they are
// counted as suppressed and summarised in the next message.
const queueSize = 16

// Runner evaluates the fleet's notifications every Interval and delivers their messages,
// one delivery goroutine per notification.
type Runner struct {
	d      Deps
	opts   Options
	clock  clock.Clock
	log    *slog.Logger
	sender *Sender
	// started is when this replica began to notify: reachability is judged only once agents
	// have had the time to reconnect.
	started time.Time

	states    map[string]State // by notification; only the Run goroutine
	throttles map[string]*throttle
	saved     []byte // last state written

	mu     sync.Mutex // guards queues
	queues map[string]chan delivery
	wg     sync.WaitGroup

	messages   *prometheus.CounterVec
	suppressed *prometheus.CounterVec
	evaluated  atomic.Int64

	// rollouts are rollout events waiting for the next evaluation (runner_rollout.go).
	rolloutMu sync.Mutex
	rollouts  []Event
}

type throttle struct {
	rl v1alpha1.RateLimit
	th *Throttle
}

type delivery struct {
	spec v1alpha1.NotificationSpec
	msg  Message
}

// NewRunner returns a Runner reading d; opts' zero fields take their defaults.
func NewRunner(d Deps, opts Options) *Runner {
	opts.SetDefaults()
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{
		d: d, opts: opts, clock: clock.Or(d.Clock), log: log, sender: NewSender(opts.Sender),
		states: map[string]State{}, throttles: map[string]*throttle{}, queues: map[string]chan delivery{},
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flotilla_hub_notification_messages_total", Help: "Notification messages, by notification and outcome (sent, failed: given up after retries or refused).",
		}, []string{"notification", "outcome"}),
		suppressed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flotilla_hub_notification_events_suppressed_total", Help: "Notification events held back by the rate limit or a full queue (summarised in the next message).",
		}, []string{"notification"}),
	}
}

// Collectors are the Runner's metrics, for the hub's registry.
func (r *Runner) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.messages, r.suppressed}
}

// Evaluations counts the evaluations finished, so that a test can wait for several
// instead of sleeping.
func (r *Runner) Evaluations() int64 { return r.evaluated.Load() }

// Run evaluates every Interval until ctx ends, then waits for deliveries under way.
func (r *Runner) Run(ctx context.Context) {
	r.load()
	t := r.clock.NewTimer(r.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.mu.Lock()
			for name, q := range r.queues {
				close(q)
				delete(r.queues, name)
			}
			r.mu.Unlock()
			r.wg.Wait()
			return
		case <-t.C():
			r.evaluate(ctx)
			r.evaluated.Add(1)
			t.Reset(r.opts.Interval)
		}
	}
}

func (r *Runner) evaluate(ctx context.Context) {
	if !r.d.Leader() {
		r.started = time.Time{}
		return
	}
	if r.started.IsZero() {
		r.started = r.clock.Now()
	}
	fleet := r.d.Fleet()
	if fleet == nil {
		return // no configuration yet: nothing to compare against, nothing to forget
	}
	configured := map[string]v1alpha1.Notification{}
	for _, nt := range fleet.Notifications {
		configured[nt.Metadata.Name] = nt
	}
	r.forget(configured)
	if len(configured) == 0 {
		r.save()
		return
	}
	snap, err := r.snapshot(ctx)
	if err != nil {
		r.log.Warn("notifications: fleet status", "error", err)
		return
	}
	rollouts := r.takeRollouts()
	for _, nt := range fleet.Notifications {
		name := nt.Metadata.Name
		st, events := Evaluate(RulesFor(nt, r.opts.FlapWindow), r.states[name], snap)
		r.states[name] = st
		events = append(events, rolloutsFor(nt, rollouts)...)
		th := r.throttle(name, nt.Spec.RateLimitOrDefault())
		msg, ok := th.Offer(snap.Time, events)
		if !ok {
			r.suppressed.WithLabelValues(name).Add(float64(len(events)))
			continue
		}
		if !r.enqueue(ctx, name, delivery{spec: nt.Spec, msg: msg}) {
			th.Return(msg)
			r.suppressed.WithLabelValues(name).Add(float64(len(msg.Events)))
		}
	}
	r.save()
}

// snapshot is the fleet as the status view shows it, with each cluster's labels.
func (r *Runner) snapshot(ctx context.Context) (Snapshot, error) {
	view, err := r.d.Status(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	labels, err := r.d.ClusterLabels(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	now := r.clock.Now()
	snap := Snapshot{
		Time: now, Assignments: make([]Assignment, 0, len(view.Assignments)),
		// Agents need up to the unreachable time to reconnect to a restarted hub.
		ReachabilityKnown: now.Sub(r.started) >= r.d.UnreachableAfter,
	}
	for _, v := range view.Assignments {
		snap.Assignments = append(snap.Assignments, assignmentOf(v, labels[v.Cluster]))
	}
	return snap, nil
}

// assignmentOf turns a status view entry into the engine's input. An unreachable cluster's
// phase is the one it last reported.
func assignmentOf(v hubclient.AssignmentView, labels map[string]string) Assignment {
	a := Assignment{
		Release: v.Release, Cluster: v.Cluster, ClusterLabels: labels, Phase: v.Phase,
		DesiredRevision: v.DesiredRevision, AppliedRevision: v.AppliedRevision, DesiredDigest: v.DesiredDigest, AppliedDigest: v.AppliedDigest,
		Drifted: v.Drifted, Conflicts: v.Conflicts, Error: v.Error, Reachable: v.Reachable,
	}
	if v.Phase == hubclient.PhaseUnreachable && v.ReportedPhase != "" {
		a.Phase = v.ReportedPhase
	}
	if v.LastSeen != nil {
		a.LastSeen = *v.LastSeen
	}
	return a
}

func (r *Runner) throttle(name string, rl v1alpha1.RateLimit) *Throttle {
	t, ok := r.throttles[name]
	if !ok || t.rl != rl {
		t = &throttle{rl: rl, th: NewThrottle(name, rl)}
		r.throttles[name] = t
	}
	return t.th
}

// forget drops the state, throttle and queue of notifications no longer configured.
func (r *Runner) forget(configured map[string]v1alpha1.Notification) {
	for name := range r.states {
		if _, ok := configured[name]; !ok {
			delete(r.states, name)
			delete(r.throttles, name)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, q := range r.queues {
		if _, ok := configured[name]; !ok {
			close(q)
			delete(r.queues, name)
		}
	}
}

// enqueue hands a message to the notification's delivery goroutine, starting it if needed.
// It reports false when the queue is full.
func (r *Runner) enqueue(ctx context.Context, name string, d delivery) bool {
	r.mu.Lock()
	q, ok := r.queues[name]
	if !ok {
		q = make(chan delivery, queueSize)
		r.queues[name] = q
		r.wg.Add(1)
		go r.deliver(ctx, name, q)
	}
	r.mu.Unlock()
	select {
	case q <- d:
		return true
	default:
		return false
	}
}

// deliver sends one notification's messages in order, until its queue is closed.
func (r *Runner) deliver(ctx context.Context, name string, q <-chan delivery) {
	defer r.wg.Done()
	for d := range q {
		if ctx.Err() != nil {
			continue // the hub is stopping: drain without sending
		}
		if err := r.send(ctx, name, d); err != nil {
			r.messages.WithLabelValues(name, "failed").Inc()
			r.log.Error("notification not delivered", "notification", name, "events", len(d.msg.Events), "error", err)
			continue
		}
		r.messages.WithLabelValues(name, "sent").Inc()
		r.log.Info("notification sent", "notification", name, "events", len(d.msg.Events), "suppressed", d.msg.SuppressedTotal())
	}
}

func (r *Runner) send(ctx context.Context, name string, d delivery) error {
	url := d.spec.URL
	if d.spec.URLFile != "" {
		data, err := os.ReadFile(d.spec.URLFile)
		if err != nil {
			return fmt.Errorf("notification %s: url file: %w", name, err)
		}
		url = strings.TrimSpace(string(data))
	}
	if err := CheckURL(name, url, d.spec.Insecure); err != nil {
		return err
	}
	var body []byte
	var err error
	switch d.spec.Type {
	case v1alpha1.NotificationSlack:
		body, err = SlackBody(d.msg)
	default:
		body, err = WebhookBody(d.msg)
	}
	if err != nil {
		return fmt.Errorf("notification %s: %w", name, err)
	}
	return r.sender.Send(ctx, name, url, body)
}
