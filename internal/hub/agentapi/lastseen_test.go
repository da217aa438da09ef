package agentapi

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flotilla/flotilla/internal/hub/store"
)

// countingToucher counts, per cluster, the times the store was told of it.
type countingToucher struct {
	st store.Store
	mu sync.Mutex
	n  map[string]int
}

func (c *countingToucher) TouchClusters(ctx context.Context, touches []store.Touch) error {
	c.mu.Lock()
	for _, t := range touches {
		c.n[t.Cluster]++
	}
	c.mu.Unlock()
	return c.st.TouchClusters(ctx, touches)
}

func (c *countingToucher) count(cluster string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[cluster]
}

// unreachableAfter is the hub's default; the other replica judges a cluster as the views do.
const unreachableAfter = 2 * time.Minute

// TestOpenStreamReachableOnEveryReplica: replica A holds the cluster's watch stream and
// receives no heartbeat; replica B, which knows only what A writes to the shared store, sees
// the cluster reachable at every second of five minutes, while A writes it once a minute
// (not at every heartbeat, of which an older agent sends one every 30s). Once the stream
// closes, both see it unreachable two minutes later, not before.
func TestOpenStreamReachableOnEveryReplica(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "hub.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.AddCluster(ctx, store.Cluster{Name: "eu-1", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		writes := &countingToucher{st: st, n: map[string]int{}}
		a := NewLastSeen(writes, nil, nil) // the wall clock, which synctest moves
		a.SetOpenRefresh(OpenRefreshFor(unreachableAfter))
		b := NewLastSeen(st, nil, nil)
		done := make(chan struct{})
		go func() { defer close(done); a.Run(ctx) }()
		defer func() { cancel(); <-done }()

		reachable := func(l *LastSeen) bool {
			c, err := st.GetCluster(ctx, "eu-1")
			if err != nil {
				t.Fatal(err)
			}
			seen, _ := l.Get(c)
			return !seen.IsZero() && time.Since(seen) < unreachableAfter
		}
		closed := a.Open("eu-1", "v1")
		// synctest bubble: this Sleep advances the bubble's fake clock, no real wait.
		time.Sleep(LastSeenFlushInterval) // B learns of the stream at A's next flush
		synctest.Wait()
		start := time.Now()
		for time.Since(start) < 5*time.Minute {
			// synctest bubble: this Sleep advances the bubble's fake clock, no real wait.
			time.Sleep(time.Second)
			if time.Since(start)%(30*time.Second) == 0 {
				a.Heartbeat("eu-1", "v1", 0) // an older agent's heartbeat
			}
			synctest.Wait()
			if !reachable(a) || !reachable(b) {
				t.Fatalf("%v after the stream opened: reachable on A %v, on B %v; want both", time.Since(start), reachable(a), reachable(b))
			}
		}
		// The first sighting, then once a minute: not every 2s flush nor every heartbeat.
		if n := writes.count("eu-1"); n < 5 || n > 7 {
			t.Errorf("the open stream was written %d times in 5 minutes; want once a minute", n)
		}

		closed()
		ended := time.Now()
		for {
			// synctest bubble: this Sleep advances the bubble's fake clock, no real wait.
			time.Sleep(time.Second)
			synctest.Wait()
			gone := time.Since(ended)
			if gone < unreachableAfter {
				if !reachable(a) || !reachable(b) {
					t.Fatalf("%v after the stream closed: reachable on A %v, on B %v; want both until 2m", gone, reachable(a), reachable(b))
				}
				continue
			}
			if reachable(a) || reachable(b) {
				t.Fatalf("%v after the stream closed: reachable on A %v, on B %v; want neither", gone, reachable(a), reachable(b))
			}
			break
		}
	})
}

// A cluster removed while its stream is open is not brought back when the stream ends.
func TestClosedStreamOfForgottenCluster(t *testing.T) {
	t.Parallel()
	l := NewLastSeen(nil, nil, nil)
	closed := l.Open("eu-1", "v1")
	l.Forget("eu-1")
	closed()
	if seen, _ := l.Get(store.Cluster{Name: "eu-1"}); !seen.IsZero() {
		t.Errorf("forgotten cluster seen at %v after its stream closed; want never", seen)
	}
}
