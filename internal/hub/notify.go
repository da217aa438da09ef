package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hubapi"
	"github.com/flotilla/flotilla/internal/notify"
)

// NotifyOptions configure the evaluation and delivery of the fleet's Notification objects.
type NotifyOptions struct {
	// Interval between evaluations of the fleet's status. Default DefaultNotifyInterval.
	Interval time.Duration
	// FlapWindow holds back an event for an assignment that was announced in the same
	// condition less than this long ago. Default DefaultFlapWindow.
	FlapWindow time.Duration
	// Sender configures delivery retries.
	Sender notify.SenderOptions
}

// Defaults of NotifyOptions.
const (
	DefaultNotifyInterval = 5 * time.Second
	DefaultFlapWindow     = 5 * time.Minute
)

func (o *NotifyOptions) setDefaults() {
	orDefault(&o.Interval, DefaultNotifyInterval)
	orDefault(&o.FlapWindow, DefaultFlapWindow)
}

// notifyStateFile keeps, in the data dir, what each notification has announced: a restarted
// hub neither repeats it nor misses what happened while it was down.
const notifyStateFile = "notifications.json"

// notifyQueue bounds the messages waiting for delivery per notification; beyond it they are
// counted as suppressed and summarised in the next message.
const notifyQueue = 16

// notifier evaluates the fleet's notifications and delivers their messages.
type notifier struct {
	h      *Hub
	opts   NotifyOptions
	sender *notify.Sender
	// started is when this replica began to notify: reachability is judged only once agents
	// have had the time to reconnect.
	started time.Time

	states    map[string]notify.State // by notification; only the run goroutine
	throttles map[string]*throttle
	saved     []byte // last state written

	mu     sync.Mutex // guards queues
	queues map[string]chan delivery
	wg     sync.WaitGroup

	messages   *prometheus.CounterVec
	suppressed *prometheus.CounterVec
	// evaluated counts finished evaluations, so that a test can wait for several instead of
	// sleeping.
	evaluated atomic.Int64

	// rollouts are rollout events waiting for the next evaluation (notify_rollout.go).
	rolloutMu sync.Mutex
	rollouts  []notify.Event
}

type throttle struct {
	rl v1alpha1.RateLimit
	th *notify.Throttle
}

type delivery struct {
	spec v1alpha1.NotificationSpec
	msg  notify.Message
}

func newNotifier(h *Hub) *notifier {
	o := h.opts.Notify
	o.setDefaults()
	n := &notifier{
		h: h, opts: o, sender: notify.NewSender(o.Sender), states: map[string]notify.State{},
		throttles: map[string]*throttle{}, queues: map[string]chan delivery{},
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flotilla_hub_notification_messages_total", Help: "Notification messages, by notification and outcome (sent, failed: given up after retries or refused).",
		}, []string{"notification", "outcome"}),
		suppressed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flotilla_hub_notification_events_suppressed_total", Help: "Notification events held back by the rate limit or a full queue (summarised in the next message).",
		}, []string{"notification"}),
	}
	h.metrics.registry.MustRegister(n.messages, n.suppressed)
	return n
}

// run evaluates every Interval until ctx ends, then waits for deliveries under way.
func (n *notifier) run(ctx context.Context) {
	n.load()
	t := n.h.clock.NewTimer(n.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			n.mu.Lock()
			for name, q := range n.queues {
				close(q)
				delete(n.queues, name)
			}
			n.mu.Unlock()
			n.wg.Wait()
			return
		case <-t.C():
			n.evaluate(ctx)
			n.evaluated.Add(1)
			t.Reset(n.opts.Interval)
		}
	}
}

func (n *notifier) evaluate(ctx context.Context) {
	if !n.h.IsLeader() {
		// Of several replicas sharing a store, the one that runs the controller notifies,
		// so each transition is announced once.
		n.started = time.Time{}
		return
	}
	if n.started.IsZero() {
		n.started = n.h.clock.Now()
	}
	fleet := n.h.ctrl.View().Fleet
	if fleet == nil {
		return // no configuration yet: nothing to compare against, nothing to forget
	}
	configured := map[string]v1alpha1.Notification{}
	for _, nt := range fleet.Notifications {
		configured[nt.Metadata.Name] = nt
	}
	n.forget(configured)
	if len(configured) == 0 {
		n.save()
		return
	}
	snap, err := n.snapshot(ctx)
	if err != nil {
		n.h.log.Warn("notifications: fleet status", "error", err)
		return
	}
	rollouts := n.takeRollouts()
	for _, nt := range fleet.Notifications {
		name := nt.Metadata.Name
		st, events := notify.Evaluate(notify.RulesFor(nt, n.opts.FlapWindow), n.states[name], snap)
		n.states[name] = st
		events = append(events, rolloutsFor(nt, rollouts)...)
		th := n.throttle(name, nt.Spec.RateLimitOrDefault())
		msg, ok := th.Offer(snap.Time, events)
		if !ok {
			n.suppressed.WithLabelValues(name).Add(float64(len(events)))
			continue
		}
		if !n.enqueue(ctx, name, delivery{spec: nt.Spec, msg: msg}) {
			th.Return(msg)
			n.suppressed.WithLabelValues(name).Add(float64(len(msg.Events)))
		}
	}
	n.save()
}

// snapshot is the fleet as the status view shows it, with each cluster's labels.
func (n *notifier) snapshot(ctx context.Context) (notify.Snapshot, error) {
	view, err := n.h.user.FleetStatus(ctx)
	if err != nil {
		return notify.Snapshot{}, err
	}
	clusters, err := n.h.store.ListClusters(ctx)
	if err != nil {
		return notify.Snapshot{}, err
	}
	labels := make(map[string]map[string]string, len(clusters))
	for _, c := range clusters {
		labels[c.Name] = c.Labels
	}
	now := n.h.clock.Now()
	snap := notify.Snapshot{
		Time: now, Assignments: make([]notify.Assignment, 0, len(view.Assignments)),
		// Agents need up to the unreachable time to reconnect to a restarted hub.
		ReachabilityKnown: now.Sub(n.started) >= n.h.opts.UnreachableAfter,
	}
	for _, v := range view.Assignments {
		snap.Assignments = append(snap.Assignments, assignmentOf(v, labels[v.Cluster]))
	}
	return snap, nil
}

// assignmentOf turns a status view entry into the engine's input. An unreachable cluster's
// phase is the one it last reported.
func assignmentOf(v hubapi.AssignmentView, labels map[string]string) notify.Assignment {
	a := notify.Assignment{
		Release: v.Release, Cluster: v.Cluster, ClusterLabels: labels, Phase: v.Phase,
		DesiredRevision: v.DesiredRevision, AppliedRevision: v.AppliedRevision, DesiredDigest: v.DesiredDigest, AppliedDigest: v.AppliedDigest,
		Drifted: v.Drifted, Conflicts: v.Conflicts, Error: v.Error, Reachable: v.Reachable,
	}
	if v.Phase == hubapi.PhaseUnreachable && v.ReportedPhase != "" {
		a.Phase = v.ReportedPhase
	}
	if v.LastSeen != nil {
		a.LastSeen = *v.LastSeen
	}
	return a
}

func (n *notifier) throttle(name string, rl v1alpha1.RateLimit) *notify.Throttle {
	t, ok := n.throttles[name]
	if !ok || t.rl != rl {
		t = &throttle{rl: rl, th: notify.NewThrottle(name, rl)}
		n.throttles[name] = t
	}
	return t.th
}

// forget drops the state, throttle and queue of notifications no longer configured.
func (n *notifier) forget(configured map[string]v1alpha1.Notification) {
	for name := range n.states {
		if _, ok := configured[name]; !ok {
			delete(n.states, name)
			delete(n.throttles, name)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, q := range n.queues {
		if _, ok := configured[name]; !ok {
			close(q)
			delete(n.queues, name)
		}
	}
}

// enqueue hands a message to the notification's delivery goroutine, starting it if needed.
// It reports false when the queue is full.
func (n *notifier) enqueue(ctx context.Context, name string, d delivery) bool {
	n.mu.Lock()
	q, ok := n.queues[name]
	if !ok {
		q = make(chan delivery, notifyQueue)
		n.queues[name] = q
		n.wg.Add(1)
		go n.deliver(ctx, name, q)
	}
	n.mu.Unlock()
	select {
	case q <- d:
		return true
	default:
		return false
	}
}

// deliver sends one notification's messages in order, until its queue is closed.
func (n *notifier) deliver(ctx context.Context, name string, q <-chan delivery) {
	defer n.wg.Done()
	for d := range q {
		if ctx.Err() != nil {
			continue // the hub is stopping: drain without sending
		}
		if err := n.send(ctx, name, d); err != nil {
			n.messages.WithLabelValues(name, "failed").Inc()
			n.h.log.Error("notification not delivered", "notification", name, "events", len(d.msg.Events), "error", err)
			continue
		}
		n.messages.WithLabelValues(name, "sent").Inc()
		n.h.log.Info("notification sent", "notification", name, "events", len(d.msg.Events), "suppressed", d.msg.SuppressedTotal())
	}
}

func (n *notifier) send(ctx context.Context, name string, d delivery) error {
	url := d.spec.URL
	if d.spec.URLFile != "" {
		data, err := os.ReadFile(d.spec.URLFile)
		if err != nil {
			return fmt.Errorf("notification %s: url file: %w", name, err)
		}
		url = strings.TrimSpace(string(data))
	}
	if err := notify.CheckURL(name, url, d.spec.Insecure); err != nil {
		return err
	}
	var body []byte
	var err error
	switch d.spec.Type {
	case v1alpha1.NotificationSlack:
		body, err = notify.SlackBody(d.msg)
	default:
		body, err = notify.WebhookBody(d.msg)
	}
	if err != nil {
		return fmt.Errorf("notification %s: %w", name, err)
	}
	return n.sender.Send(ctx, name, url, body)
}

// load reads the persisted state; a missing or unreadable file starts afresh (an unreadable
// one is logged: the notifications then re-announce what is wrong now).
func (n *notifier) load() {
	data, err := os.ReadFile(filepath.Join(n.h.opts.DataDir, notifyStateFile))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var states map[string]notify.State
	if err == nil {
		err = json.Unmarshal(data, &states)
	}
	if err != nil {
		n.h.log.Warn("notifications: state unreadable; starting afresh", "file", notifyStateFile, "error", err)
		return
	}
	n.states, n.saved = states, data
}

// save writes the state when it changed, atomically (a new file renamed over the old).
func (n *notifier) save() {
	data, err := json.Marshal(n.states)
	if err != nil || bytes.Equal(data, n.saved) {
		return
	}
	path := filepath.Join(n.h.opts.DataDir, notifyStateFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		n.h.log.Warn("notifications: state not saved", "error", err)
		return
	}
	n.saved = data
}
