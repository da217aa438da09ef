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
type LastSeen struct {
	st    Toucher
	clock clock.Clock
	log   *slog.Logger
	mu    sync.Mutex
	seen  map[string]seenAt
	dirty map[string]bool
}

type seenAt struct {
	t       time.Time
	version string
	// outbox is the agent's outbox depth from its last heartbeat; hasOutbox says whether one
	// arrived since this hub process started. Kept in memory only: it is news, not history.
	outbox    int
	hasOutbox bool
}

// Toucher is the store LastSeen writes to.
type Toucher interface {
	TouchClusters(ctx context.Context, touches []store.Touch) error
}

// LastSeenFlushInterval is how often LastSeen writes what it learnt to the store.
const LastSeenFlushInterval = 2 * time.Second

// NewLastSeen returns an empty LastSeen that writes to st; Run flushes it.
func NewLastSeen(st Toucher, c clock.Clock, log *slog.Logger) *LastSeen {
	return &LastSeen{st: st, clock: clock.Or(c), log: log, seen: map[string]seenAt{}, dirty: map[string]bool{}}
}

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
	if version != "" {
		s.version = version
	}
	l.seen[cluster] = s
	l.dirty[cluster] = true
	return s
}

// Get returns the later of what memory and the store know.
func (l *LastSeen) Get(c store.Cluster) (time.Time, string) {
	l.mu.Lock()
	s, ok := l.seen[c.Name]
	l.mu.Unlock()
	if !ok || s.t.Before(c.LastSeen) {
		return c.LastSeen, c.AgentVersion
	}
	if s.version == "" {
		s.version = c.AgentVersion
	}
	return s.t, s.version
}

func (l *LastSeen) Forget(cluster string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.seen, cluster)
	delete(l.dirty, cluster)
}

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

// flush writes the sightings since the last flush in one transaction. If the write fails
// they are marked dirty again (unless seen since), so a database hiccup delays them rather
// than losing them.
func (l *LastSeen) flush(ctx context.Context) {
	l.mu.Lock()
	batch := make([]store.Touch, 0, len(l.dirty))
	for c := range l.dirty {
		s := l.seen[c]
		batch = append(batch, store.Touch{Cluster: c, Seen: s.t, AgentVersion: s.version})
	}
	l.dirty = map[string]bool{}
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
