package agentapi

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// LastSeen keeps when each agent was last heard from in memory and writes the changes to the
// store every few seconds: a heartbeat then costs a map write, not a database transaction,
// which is what keeps thousands of idle agents cheap. Views read the memory first, so they are
// never behind by the flush interval.
//
// An agent whose watch stream is open here is heard from now: the stream's connection carries
// HTTP/2 PINGs, and a connection that stops answering them is closed (the hub's
// --agent-ping-interval and --agent-ping-timeout), which ends the stream. Such a cluster is
// written to the store every OpenRefresh rather than at every heartbeat, so that the other
// replicas, which read the store, see it heard from within OpenRefresh plus a flush.
type LastSeen struct {
	st          Toucher
	clock       clock.Clock
	log         *slog.Logger
	openRefresh time.Duration
	mu          sync.Mutex
	seen        map[string]seenAt
	dirty       map[string]bool
}

type seenAt struct {
	t       time.Time
	version string
	// outbox is the agent's outbox depth from its last heartbeat; hasOutbox says whether one
	// arrived since this hub process started. Kept in memory only: it is news, not history.
	outbox    int
	hasOutbox bool
	// open counts the cluster's watch streams open on this replica; stored is the last time
	// written to the store for it.
	open   int
	stored time.Time
}

// Toucher is the store LastSeen writes to.
type Toucher interface {
	TouchClusters(ctx context.Context, touches []store.Touch) error
}

// LastSeenFlushInterval is how often LastSeen writes what it learnt to the store.
const LastSeenFlushInterval = 2 * time.Second

// DefaultOpenRefresh is how often a cluster with an open watch stream is written to the store.
const DefaultOpenRefresh = time.Minute

// OpenRefreshFor is the refresh that keeps a connected cluster reachable on every replica
// when clusters are unreachable after unreachableAfter: at most half of it (a replica reading
// the store sees a time at most the refresh plus a flush old), and at most DefaultOpenRefresh.
func OpenRefreshFor(unreachableAfter time.Duration) time.Duration {
	return max(min(DefaultOpenRefresh, unreachableAfter/2), LastSeenFlushInterval)
}

// NewLastSeen returns an empty LastSeen that writes to st; Run flushes it. Open streams are
// written every DefaultOpenRefresh (SetOpenRefresh).
func NewLastSeen(st Toucher, c clock.Clock, log *slog.Logger) *LastSeen {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &LastSeen{st: st, clock: clock.Or(c), log: log, openRefresh: DefaultOpenRefresh, seen: map[string]seenAt{}, dirty: map[string]bool{}}
}

// SetOpenRefresh sets how often a cluster with an open watch stream is written to the store
// (OpenRefreshFor). Call it before Run.
func (l *LastSeen) SetOpenRefresh(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.openRefresh = max(d, LastSeenFlushInterval)
}

// Touch records that the cluster's agent made a request.
func (l *LastSeen) Touch(cluster, version string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.touchLocked(cluster, version)
}

// Heartbeat is Touch plus the outbox depth the agent's heartbeat carries.
func (l *LastSeen) Heartbeat(cluster, version string, outboxDepth int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.touchLocked(cluster, version)
	s.outbox, s.hasOutbox = outboxDepth, true
	l.seen[cluster] = s
}

// Open records that a watch stream of the cluster opened here; the cluster is heard from
// until the function it returns is called, when the stream ends.
func (l *LastSeen) Open(cluster, version string) (closed func()) {
	l.mu.Lock()
	s := l.touchLocked(cluster, version)
	s.open++
	l.seen[cluster] = s
	l.dirty[cluster] = true // its first sighting reaches the store at the next flush
	l.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { l.close(cluster) }) }
}

// close ends one of the cluster's streams: it was heard from until now. A cluster forgotten
// meanwhile (removed) is not brought back.
func (l *LastSeen) close(cluster string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.seen[cluster]
	if !ok {
		return
	}
	s.open = max(s.open-1, 0)
	s.t = l.clock.Now()
	l.seen[cluster] = s
	l.dirty[cluster] = true
}

// OutboxDepth returns the outbox depth of the cluster's last heartbeat, if any arrived.
func (l *LastSeen) OutboxDepth(cluster string) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.seen[cluster]
	return s.outbox, ok && s.hasOutbox
}

func (l *LastSeen) touchLocked(cluster, version string) seenAt {
	s := l.seen[cluster]
	s.t = l.clock.Now()
	changed := version != "" && version != s.version
	if version != "" {
		s.version = version
	}
	l.seen[cluster] = s
	// A cluster with an open stream reaches the store on its refresh; only news goes sooner.
	if s.open == 0 || changed {
		l.dirty[cluster] = true
	}
	return s
}

// Get returns the later of what memory and the store know.
func (l *LastSeen) Get(c store.Cluster) (time.Time, string) {
	l.mu.Lock()
	s, ok := l.seen[c.Name]
	if ok && s.open > 0 {
		s.t = l.clock.Now()
	}
	l.mu.Unlock()
	if !ok || s.t.Before(c.LastSeen) {
		return c.LastSeen, c.AgentVersion
	}
	if s.version == "" {
		s.version = c.AgentVersion
	}
	return s.t, s.version
}

// Forget drops what is known of a removed cluster.
func (l *LastSeen) Forget(cluster string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.seen, cluster)
	delete(l.dirty, cluster)
}

// Run flushes every LastSeenFlushInterval until ctx ends, then once more.
func (l *LastSeen) Run(ctx context.Context) {
	t := l.clock.NewTimer(LastSeenFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.flush(context.Background())
			return
		case <-t.C():
			l.flush(ctx)
			t.Reset(LastSeenFlushInterval)
		}
	}
}

// flush writes, in one transaction, the sightings since the last flush and the clusters with
// an open stream not written for openRefresh. If the write fails they are marked dirty again
// (unless seen since), so a database hiccup delays them rather than losing them.
func (l *LastSeen) flush(ctx context.Context) {
	l.mu.Lock()
	now := l.clock.Now()
	batch := make([]store.Touch, 0, len(l.dirty))
	for c, s := range l.seen {
		if !l.dirty[c] && (s.open == 0 || now.Sub(s.stored) < l.openRefresh) {
			continue
		}
		if s.open > 0 {
			s.t = now
		}
		s.stored = s.t
		l.seen[c] = s
		batch = append(batch, store.Touch{Cluster: c, Seen: s.t, AgentVersion: s.version})
	}
	clear(l.dirty)
	l.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := l.st.TouchClusters(ctx, batch); err != nil {
		l.log.Warn("record last seen; retrying at the next flush", "clusters", len(batch), "error", err)
		l.mu.Lock()
		for _, t := range batch {
			if _, ok := l.seen[t.Cluster]; ok {
				l.dirty[t.Cluster] = true
			}
		}
		l.mu.Unlock()
	}
}
