package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"k8s.io/client-go/rest"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/backoff"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/render"
	"github.com/flotilla/flotilla/internal/secrets"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// Options configure an agent. HubURL, StateDir and RESTConfig are required; JoinToken only for
// the first start (afterwards the identity in the state dir is used). A zero field takes its
// value from DefaultOptions.
type Options struct {
	// HubURL is the hub's agent endpoint, https://HOST:PORT.
	HubURL string
	// HubURLs are further agent endpoints of the same hub (its replicas sharing one store):
	// the agent moves to the next, in turn, when the current one cannot be reached.
	HubURLs []string
	// JoinToken is the one-time token from `flotilla cluster add`.
	JoinToken string
	// RESTConfig reaches the cluster this agent reconciles. Required unless Target is set.
	RESTConfig *rest.Config
	// Target, when set, is what the agent reconciles into instead of the API server that
	// RESTConfig reaches (the fleet simulator's in-memory clusters).
	Target Target
	// DialContext, when set, opens the agent's TCP connections to the hub (the fleet
	// simulator counts the bytes that cross them). Default: a net.Dialer.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// WrapTransport, when set, wraps the agent's HTTP transport to the hub (the fleet
	// simulator counts requests with it).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// StateDir keeps identity, desired state, outbox and artifacts.
	StateDir string
	// Version is reported to the hub.
	Version string
	Logger  *slog.Logger
	// Clock is the time source of every interval, retry, backoff and certificate renewal.
	// Default clock.Real{}; tests move a clock.Fake instead of sleeping.
	Clock clock.Clock
	// HeartbeatInterval between heartbeats while the agent has no watch stream open with a hub
	// that counts one as hearing from the agent (an older hub, or none reachable); with one
	// open, how often a changed outbox depth is sent at most.
	HeartbeatInterval time.Duration
	// HeartbeatRefresh: while such a stream is open, heartbeats go out when what they carry
	// changes, and at least this often (less up to a quarter, at random).
	HeartbeatRefresh time.Duration
	// PingInterval and PingTimeout: the agent PINGs its connection to the hub after
	// PingInterval without a frame from it, and closes it (and reconnects) when no answer
	// came within PingTimeout.
	PingInterval, PingTimeout time.Duration
	// ReportInterval: how often the outbox is flushed when nothing signals it.
	ReportInterval time.Duration
	// MaxBackoff caps the jittered exponential backoff between reconnects.
	MaxBackoff time.Duration
	// Metrics, when set, receives the agent's Prometheus metrics.
	Metrics *Metrics
	// MaxOutbox bounds the reports kept while the hub is unreachable; beyond it older reports
	// superseded by a newer one of the same release are compacted away (and counted).
	MaxOutbox int
}

// DefaultOptions are the values an agent uses for every field left zero; the agent verb's
// flags take their defaults from here.
func DefaultOptions() Options {
	return Options{
		Clock:             clock.Real{},
		HeartbeatInterval: 30 * time.Second,
		HeartbeatRefresh:  10 * time.Minute,
		PingInterval:      defaultPingInterval,
		PingTimeout:       defaultPingTimeout,
		ReportInterval:    5 * time.Second,
		MaxBackoff:        30 * time.Second,
		MaxOutbox:         10000,
	}
}

// minBackoff is the first step of the backoff between reconnects and failed reports.
const minBackoff = 500 * time.Millisecond

func (o *Options) setDefaults() {
	def := DefaultOptions()
	if o.Clock == nil {
		o.Clock = def.Clock
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = def.HeartbeatInterval
	}
	if o.HeartbeatRefresh <= 0 {
		o.HeartbeatRefresh = def.HeartbeatRefresh
	}
	if o.PingInterval <= 0 {
		o.PingInterval = def.PingInterval
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = def.PingTimeout
	}
	if o.ReportInterval <= 0 {
		o.ReportInterval = def.ReportInterval
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = def.MaxBackoff
	}
	if o.MaxOutbox <= 0 {
		o.MaxOutbox = def.MaxOutbox
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Agent reconciles one cluster towards the desired state its hub publishes, and keeps doing
// so from its cached state when the hub is unreachable.
type Agent struct {
	opts       Options
	log        *slog.Logger
	st         *state
	id         *identity
	reconciler Target
	// renderer renders each release in a bounded child process of this binary (small plain
	// directories in this one), so a chart or kustomization that would exhaust memory or spin
	// fails its own release and never the agent; its slots go round-robin between projects.
	renderer   render.Lazy
	httpClient *http.Client
	cert       clientCert
	transport  *swappableTransport
	// renewedCertPEM is the certificate renewLoop last obtained (only that goroutine uses it);
	// id stays as loaded, so other goroutines read it without locks.
	renewedCertPEM []byte
	client         agentv1connect.AgentServiceClient

	clock   clock.Clock
	changed chan struct{} // desired state changed
	flush   chan struct{} // outbox has something new
	beat    chan struct{} // something a heartbeat carries changed: send one now
	live    *liveness     // what the hub has heard, for the heartbeat loop

	// enqueueMu orders queueing a report against refusing a desired state, so that no report
	// on a release the refused document dropped enters the outbox after it was cleared of them.
	enqueueMu sync.Mutex
	// offerMu orders desired states offered from the hub's watch stream and from imported
	// bundles, so that a bundle's generation check and its acceptance are one step.
	offerMu sync.Mutex

	// passes counts the lanes' reconcile passes in flight (lanes.go).
	passes atomic.Int32

	mu      sync.Mutex
	desired *desired.State // the last accepted desired state
	lastGen int64          // its generation
	refused *RefusedError  // the hub's latest desired state, when the agent refused it

	caps capabilityCache // the cluster's .Capabilities for charts (helm.go)

	// age is the cluster's age key (agekey.go): secrets are encrypted to its recipient.
	age secrets.Key
	// projectKeys are the other projects' age keys (agekey.go); age is the platform's.
	projectKeys *projectKeys
}

// New opens the state dir and, on the first start, joins the hub with the join token.
func New(ctx context.Context, opts Options) (*Agent, error) {
	opts.setDefaults()
	if opts.StateDir == "" {
		return nil, errors.New("a state dir is required")
	}
	if opts.RESTConfig == nil && opts.Target == nil {
		return nil, errors.New("a cluster configuration is required")
	}
	st, err := openState(opts.StateDir)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		opts: opts, log: opts.Logger, st: st, clock: opts.Clock,
		changed: make(chan struct{}, 1), flush: make(chan struct{}, 1), beat: make(chan struct{}, 1),
		live: newLiveness(opts.HeartbeatInterval, opts.HeartbeatRefresh),
	}
	if err := a.init(ctx); err != nil {
		_ = st.close() // already failing: the first error is the one returned
		return nil, err
	}
	return a, nil
}

func (a *Agent) init(ctx context.Context) error {
	id, err := a.st.loadIdentity()
	if err != nil {
		return err
	}
	joined := id == nil
	if a.age, err = loadOrCreateAgeKey(a.opts.StateDir); err != nil {
		return err
	}
	if a.projectKeys, err = loadProjectKeys(a.opts.StateDir, a.age); err != nil {
		return err
	}
	if id == nil {
		if a.opts.JoinToken == "" {
			return errNotJoined
		}
		if a.opts.HubURL == "" {
			return errors.New("--hub is required to join")
		}
		if id, err = a.joinWhenLetIn(ctx); err != nil {
			return err
		}
		if err := a.st.saveIdentity(id); err != nil {
			return fmt.Errorf("save identity: %w", err)
		}
		if err := a.st.setNextSeq(id.NextReportSeq); err != nil {
			return fmt.Errorf("save report seq: %w", err)
		}
	}
	// Every line names the cluster, once: callers do not add it to the logger.
	a.log = a.log.With("cluster", id.Cluster)
	if joined {
		a.log.Info("joined hub", "hub", id.HubURL)
	}
	if a.opts.HubURL != "" && a.opts.HubURL != id.HubURL {
		a.log.Warn("hub URL differs from the one this agent joined; using the new one", "joined", id.HubURL, "now", a.opts.HubURL)
		id.HubURL = a.opts.HubURL
	}
	a.id = id
	if a.httpClient, a.transport, err = mtlsClient(id, &a.cert, a.opts.DialContext, a.opts.WrapTransport, hubHTTP2(a.opts.PingInterval, a.opts.PingTimeout)); err != nil {
		return err
	}
	if len(a.opts.HubURLs) > 0 {
		fo, err := newHubFailover(a.httpClient.Transport, append([]string{id.HubURL}, a.opts.HubURLs...))
		if err != nil {
			return err
		}
		a.httpClient.Transport = fo
	}
	a.client = agentv1connect.NewAgentServiceClient(a.httpClient, id.HubURL)
	if a.reconciler = a.opts.Target; a.reconciler == nil {
		if a.reconciler, err = reconcile.New(a.opts.RESTConfig, reconcile.Config{}, a.log); err != nil {
			return err
		}
	}
	ds, err := a.st.loadDesired()
	var unreadable *unreadableDesiredError
	if errors.As(err, &unreadable) {
		a.log.Error("cached desired state cannot be read; starting without it until the hub sends one", "error", err)
		ds, err = nil, nil
	}
	if err != nil {
		return err
	}
	a.desired = ds
	if ds != nil {
		a.lastGen = ds.Generation
	}
	return nil
}

// Cluster is the name this agent joined as.
func (a *Agent) Cluster() string { return a.id.Cluster }

// Close releases the state dir.
func (a *Agent) Close() error { return a.st.close() }

// Run works until ctx ends: it watches the hub for desired state, reconciles every assignment
// on change and on its interval, and sends reports from the outbox. Losing the hub only
// delays reports and new desired states.
func (a *Agent) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	// offlineLoop takes bundles carried to an air-gapped site (offline.go).
	for _, loop := range []func(context.Context){a.watchLoop, a.reportLoop, a.heartbeatLoop, a.renewLoop, a.offlineLoop} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx)
		}()
	}
	a.reconcileLoop(ctx)
	wg.Wait()
	flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a.flushOutbox(flushCtx)
	return nil
}

// watchLoop keeps one Watch stream open, resuming from the last generation it saw. The
// request carries a heartbeat; a hub that counts the open stream as hearing from the agent
// says so in the first message, and the heartbeat loop then sends only news (liveness).
func (a *Agent) watchLoop(ctx context.Context) {
	bo := a.newBackoff()
	for ctx.Err() == nil {
		a.mu.Lock()
		known := a.lastGen
		a.mu.Unlock()
		hb := a.heartbeatRequest()
		stream, err := a.client.Watch(ctx, connect.NewRequest(&agentv1.WatchRequest{KnownGeneration: known, AgentVersion: a.opts.Version, Heartbeat: hb}))
		if err == nil {
			a.opts.Metrics.setConnected(true)
			for stream.Receive() {
				bo.Reset()
				if stream.Msg().GetStreamLiveness() {
					a.live.opened(beatOf(hb), a.clock.Now())
				}
				if ds := stream.Msg().GetDesired(); ds != nil {
					a.log.Info("desired state", "generation", ds.Generation, "assignments", len(ds.Assignments), "tombstones", len(ds.Removed))
					a.offer(ds)
				}
			}
			a.live.closed(a.clock.Now())
			err = stream.Err()
			_ = stream.Close() // the stream's error is err above
			a.opts.Metrics.setConnected(false)
		}
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("watch interrupted; reconnecting", "error", err)
		if !a.holdOff(ctx, "watch", err) {
			a.sleep(ctx, bo.Next())
		}
	}
}

// heartbeatRequest is what a heartbeat tells the hub now: the outbox depth, the version and
// generation, the age recipient, and the refusal of the hub's latest desired state, if any.
func (a *Agent) heartbeatRequest() *agentv1.HeartbeatRequest {
	req := &agentv1.HeartbeatRequest{OutboxDepth: int32(a.st.outboxDepth()), AgentVersion: a.opts.Version, AgeRecipient: a.age.Recipient}
	req.ProjectAgeRecipients = a.projectKeys.recipients()
	a.mu.Lock()
	defer a.mu.Unlock()
	req.Generation = a.lastGen
	if a.refused != nil {
		req.RefusedGeneration, req.RefusedReason = a.refused.Generation, a.refused.Error()
	}
	return req
}

// heartbeatLoop tells the hub that the agent is alive, which generation it runs, its outbox
// depth and, while it refuses the hub's latest desired state, which one and why: every
// HeartbeatInterval while no watch stream counts as that (liveness), else when it changes and
// every HeartbeatRefresh; a refusal and its end at once.
func (a *Agent) heartbeatLoop(ctx context.Context) {
	t := a.clock.NewTimer(a.opts.HeartbeatInterval)
	defer t.Stop()
	urgent := false
	for {
		req := a.heartbeatRequest()
		send, wait := a.live.due(beatOf(req), a.clock.Now(), urgent)
		urgent = false
		if send {
			t.Stop() // due says when the next look is, from this one
			_, err := a.client.Heartbeat(ctx, connect.NewRequest(req))
			switch {
			case err == nil:
				a.live.delivered(beatOf(req), a.clock.Now())
			case ctx.Err() != nil:
				return
			default:
				a.live.attempted(a.clock.Now())
				a.log.Debug("heartbeat failed", "error", err)
				if d, ok := retryAfter(err, a.clock.Now()); ok && d > a.opts.HeartbeatInterval {
					// The next look would come too soon for the hub: wait as it asked.
					a.holdOff(ctx, "heartbeat", err)
				}
			}
			continue // due says when the next one is
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-a.live.wake:
		case <-a.beat:
			urgent = true
		}
	}
}

// reportLoop sends the outbox in order and forgets a report only once the hub acked it.
func (a *Agent) reportLoop(ctx context.Context) {
	bo := a.newBackoff()
	t := a.clock.NewTimer(a.opts.ReportInterval)
	defer t.Stop()
	batchSize := maxReportBatch
	for {
		for {
			sent, err := a.sendBatch(ctx, batchSize)
			if err == nil {
				bo.Reset()
				batchSize = min(batchSize*2, maxReportBatch)
				if sent == 0 {
					break
				}
				continue
			}
			if ctx.Err() != nil {
				break
			}
			a.log.Warn("report not delivered; kept in the outbox", "reports", sent, "error", err)
			if a.holdOff(ctx, "report", err) {
				break
			}
			if tooLarge(err) && batchSize > 1 {
				// The hub refused the request itself, not the load: a smaller batch gets
				// through, where resending the same one would jam the outbox forever.
				batchSize = max(batchSize/2, 1)
				continue
			}
			a.sleep(ctx, bo.Next())
			break
		}
		t.Reset(a.opts.ReportInterval)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-a.flush:
		}
	}
}

// maxReportBatch is the most reports sent in one request.
const maxReportBatch = 100

// sendBatch sends up to n reports from the outbox and removes the acked ones. It returns how
// many it tried to send (0: the outbox is empty).
func (a *Agent) sendBatch(ctx context.Context, n int) (int, error) {
	batch, err := a.st.pending(n)
	if err != nil || len(batch) == 0 {
		return 0, err
	}
	resp, err := a.client.Report(ctx, connect.NewRequest(&agentv1.ReportRequest{Reports: batch}))
	if connect.CodeOf(err) == connect.CodeInvalidArgument {
		return len(batch), a.sendEach(ctx, batch)
	}
	if err != nil {
		return len(batch), err
	}
	if err := a.st.ack(resp.Msg.GetAcked()); err != nil {
		return len(batch), fmt.Errorf("remove acked reports from the outbox: %w", err)
	}
	a.opts.Metrics.setOutbox(a.st.outboxDepth())
	if len(resp.Msg.GetAcked()) == 0 {
		return len(batch), errors.New("hub acked none of the reports")
	}
	return len(batch), nil
}

// sendEach sends a batch the hub refused as invalid one report at a time, so that one report it
// will never take (a release its desired state does not hold, an oversized report) cannot hold
// back the rest: such a report is logged, counted and dropped from the outbox, since sending
// it again cannot succeed.
func (a *Agent) sendEach(ctx context.Context, batch []*agentv1.Report) error {
	for _, r := range batch {
		resp, err := a.client.Report(ctx, connect.NewRequest(&agentv1.ReportRequest{Reports: []*agentv1.Report{r}}))
		var acked []uint64
		switch {
		case connect.CodeOf(err) == connect.CodeInvalidArgument:
			a.log.Error("report refused by the hub as invalid; dropped from the outbox", "seq", r.GetSeq(), "error", err)
			a.opts.Metrics.reportRefused()
			acked = []uint64{r.GetSeq()}
		case err != nil:
			return err
		default:
			acked = resp.Msg.GetAcked()
		}
		if err := a.st.ack(acked); err != nil {
			return fmt.Errorf("remove report %d from the outbox: %w", r.GetSeq(), err)
		}
	}
	a.opts.Metrics.setOutbox(a.st.outboxDepth())
	return nil
}

// flushOutbox tries, once, to deliver what is left in the outbox: on shutdown, so that a
// stopped agent leaves nothing unsent when the hub is reachable.
func (a *Agent) flushOutbox(ctx context.Context) {
	for ctx.Err() == nil {
		sent, err := a.sendBatch(ctx, maxReportBatch)
		if err != nil {
			a.log.Warn("outbox not flushed on shutdown; it is sent at the next start", "error", err)
			return
		}
		if sent == 0 {
			return
		}
	}
}

// newBackoff is the jittered exponential backoff between reconnects and failed reports, so
// that a hub restart with thousands of agents is not a thundering herd.
func (a *Agent) newBackoff() *backoff.Backoff {
	return &backoff.Backoff{Min: minBackoff, Max: a.opts.MaxBackoff}
}
