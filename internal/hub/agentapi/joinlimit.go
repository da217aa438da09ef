package agentapi

import (
	"fmt"
	"github.com/flotilla/flotilla/internal/keyrate"
	"net"
	"net/http"
	"net/netip"

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
	clock clock.Clock
	addrs *keyrate.Buckets[netip.Prefix]
}

func newJoinLimiter(o Options, c clock.Clock) *joinLimiter {
	qps, burst := o.JoinQPS, o.JoinBurst
	if qps <= 0 {
		qps = 1
	}
	if burst <= 0 {
		burst = 20
	}
	return &joinLimiter{clock: c, addrs: keyrate.New[netip.Prefix](c, qps, burst, maxJoinAddrs)}
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

// limitJoin applies the client address's bucket to Join.
func (l *limiter) limitJoin(j *joinLimiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := joinAddr(r.RemoteAddr)
		if wait := take(j.addrs.Get(addr), j.clock.Now()); wait > 0 {
			l.refuse(w, r, fmt.Sprintf("join from %s: too many attempts from this address", addr.Addr()), wait)
			return
		}
		next.ServeHTTP(w, r)
	})
}
