package agentapi

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/flotilla/flotilla/internal/clock"
)

// buckets is a token bucket per key (a cluster, a client address), created on first use and
// evicted once idle: about 150 bytes per recently active key.
type buckets[K comparable] struct {
	clock clock.Clock
	qps   rate.Limit
	burst int
	// idleAfter: a bucket untouched for this long has refilled to its burst, the state of a
	// new bucket, so evicting it changes nothing for its key.
	idleAfter time.Duration
	// max bounds the buckets kept (0: no bound); past it, every key without a bucket shares
	// overflow, so that a flood from many keys costs bounded memory and is still refused.
	max      int
	overflow *rate.Limiter

	mu        sync.Mutex
	byKey     map[K]*agentBucket
	nextSweep time.Time
}

type agentBucket struct {
	lim  *rate.Limiter
	last time.Time // last request, under buckets.mu
}

func newBuckets[K comparable](c clock.Clock, qps float64, burst, maxKeys int) *buckets[K] {
	return &buckets[K]{
		clock: c, qps: rate.Limit(qps), burst: burst,
		idleAfter: time.Duration(float64(burst) / qps * float64(time.Second)),
		max:       maxKeys, overflow: rate.NewLimiter(rate.Limit(qps), burst),
		byKey: map[K]*agentBucket{},
	}
}

// get returns key's bucket, evicting idle ones now and then.
func (b *buckets[K]) get(key K) *rate.Limiter {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !now.Before(b.nextSweep) {
		for k, e := range b.byKey {
			if now.Sub(e.last) >= b.idleAfter {
				delete(b.byKey, k)
			}
		}
		b.nextSweep = now.Add(max(b.idleAfter, 10*time.Second))
	}
	e := b.byKey[key]
	if e == nil {
		if b.max > 0 && len(b.byKey) >= b.max {
			return b.overflow
		}
		e = &agentBucket{lim: rate.NewLimiter(b.qps, b.burst)}
		b.byKey[key] = e
	}
	e.last = now
	return e.lim
}

func (b *buckets[K]) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byKey)
}
