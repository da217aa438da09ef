package agentapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/flotilla/flotilla/internal/clock"
)

// maxJoinAddrs bounds the per-address buckets kept at once. Beyond it, every address without
// a bucket shares one overflow bucket, so that a flood from many addresses costs bounded
// memory and still gets refused.
const maxJoinAddrs = 1 << 16

// joinLimiter is the unauthenticated Join's token bucket per client address (an IPv6
// address counts by its /64, which one client usually holds whole). It stands in front of
// the store: a refused Join reads nothing.
type joinLimiter struct {
	clock     clock.Clock
	qps       rate.Limit
	burst     int
	idleAfter time.Duration

	mu        sync.Mutex
	addrs     map[netip.Prefix]*agentBucket
	overflow  *rate.Limiter
	nextSweep time.Time
}

func newJoinLimiter(o Options, c clock.Clock) *joinLimiter {
	qps, burst := o.JoinQPS, o.JoinBurst
	if qps <= 0 {
		qps = 1
	}
	if burst <= 0 {
		burst = 20
	}
	return &joinLimiter{
		clock: c, qps: rate.Limit(qps), burst: burst,
		idleAfter: time.Duration(float64(burst) / qps * float64(time.Second)),
		addrs:     map[netip.Prefix]*agentBucket{},
		overflow:  rate.NewLimiter(rate.Limit(qps), burst),
	}
}

// joinAddr is the key of a request's client address.
func joinAddr(remote string) netip.Prefix {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	a = a.Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

func (j *joinLimiter) bucket(addr netip.Prefix) *rate.Limiter {
	now := j.clock.Now()
	j.mu.Lock()
	defer j.mu.Unlock()
	if !now.Before(j.nextSweep) {
		for a, b := range j.addrs {
			if now.Sub(b.last) >= j.idleAfter {
				delete(j.addrs, a)
			}
		}
		j.nextSweep = now.Add(max(j.idleAfter, 10*time.Second))
	}
	b := j.addrs[addr]
	if b == nil {
		if len(j.addrs) >= maxJoinAddrs {
			return j.overflow
		}
		b = &agentBucket{lim: rate.NewLimiter(j.qps, j.burst)}
		j.addrs[addr] = b
	}
	b.last = now
	return b.lim
}

// limitJoin applies the client address's bucket to Join.
func (l *limiter) limitJoin(j *joinLimiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := joinAddr(r.RemoteAddr)
		if wait := take(j.bucket(addr), j.clock.Now()); wait > 0 {
			l.refuse(w, r, fmt.Sprintf("join from %s: too many attempts from this address", addr.Addr()), wait)
			return
		}
		next.ServeHTTP(w, r)
	})
}
