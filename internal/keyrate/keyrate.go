// Package keyrate is a token bucket per key (a cluster, a client address), created on first
// use and evicted once idle, with a bound on the keys it keeps: the hub's limits on agents,
// joins and webhooks share it.
package keyrate

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/flotilla/flotilla/internal/clock"
)

// Buckets is a token bucket per key (a cluster, a client address), created on first use and
// evicted once idle: about 150 bytes per recently active key.
type Buckets[K comparable] struct {
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
	byKey     map[K]*bucket
	nextSweep time.Time
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time // last request, under Buckets.mu
}

// New returns buckets of qps and burst for each key; past maxKeys keys (0: no bound) the
// keys without a bucket share one.
func New[K comparable](c clock.Clock, qps float64, burst, maxKeys int) *Buckets[K] {
	return &Buckets[K]{
		clock: c, qps: rate.Limit(qps), burst: burst,
		idleAfter: time.Duration(float64(burst) / qps * float64(time.Second)),
		max:       maxKeys, overflow: rate.NewLimiter(rate.Limit(qps), burst),
		byKey: map[K]*bucket{},
	}
}

// Get returns key's bucket, evicting idle ones now and then.
func (b *Buckets[K]) Get(key K) *rate.Limiter {
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
		e = &bucket{lim: rate.NewLimiter(b.qps, b.burst)}
		b.byKey[key] = e
	}
	e.last = now
	return e.lim
}

// Len counts the buckets kept.
func (b *Buckets[K]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byKey)
}

// ClientPrefix is the key of a client address (a request's RemoteAddr, host:port or a bare
// host): itself for IPv4, its /64 for IPv6, where one client holds the whole block. An
// address that does not parse is the zero prefix: such clients share one key.
func ClientPrefix(remote string) netip.Prefix {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	if a = a.Unmap(); a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// Take takes a token of lim at now, or returns how long until one is there; a refusal takes
// none, so that a client retrying too early does not push its own turn further out.
func Take(now time.Time, lim *rate.Limiter) (time.Duration, bool) {
	res := lim.ReserveN(now, 1)
	if !res.OK() {
		return time.Second, false
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false
	}
	return 0, true
}
