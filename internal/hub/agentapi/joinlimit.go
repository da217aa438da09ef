package agentapi

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/keyrate"
)

// maxJoinAddrs bounds the per-address buckets kept at once. Beyond it, every address without
// a bucket shares one overflow bucket, so that a flood from many addresses costs bounded
// memory and still gets refused.
const maxJoinAddrs = 1 << 16

// joinLimiter is the unauthenticated Join's token bucket per client address (an IPv6
// address counts by its /64, which one client usually holds whole), charged for failed
// joins only: a bad or used token, a malformed request. A storm of agents joining with
// valid tokens from one address (a NAT, a simulator on loopback) waits its turns in the
// join queue and all join; an address that spent its bucket on failures is refused in front
// of the queue and the store, until the bucket refills.
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

// joinOutcome is where Join says that the client failed (joinFailed), for limitJoin to charge
// the address.
type joinOutcome struct{ failed bool }

type joinOutcomeKey struct{}

// joinFailed records that this join failed by the client's fault.
func joinFailed(ctx context.Context) {
	if o, ok := ctx.Value(joinOutcomeKey{}).(*joinOutcome); ok {
		o.failed = true
	}
}

// limitJoin refuses an address whose failed joins spent its bucket, queues the others in
// front of the store work (round-robin across addresses), and charges the address for each
// join that fails.
func (l *limiter) limitJoin(j *joinLimiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := keyrate.ClientPrefix(r.RemoteAddr)
		bucket := j.addrs.Get(addr)
		now := j.clock.Now()
		if tokens := bucket.TokensAt(now); tokens < 1 {
			wait := time.Duration((1 - tokens) / float64(bucket.Limit()) * float64(time.Second))
			l.refuse(w, r, fmt.Sprintf("join from %s: too many failed attempts from this address", addr.Addr()), wait)
			return
		}
		away, err := l.joins.acquire(r.Context(), addr.String())
		if err != nil {
			return // the client went away
		}
		if away != nil {
			l.turnAway(w, r, "join", l.joins, away)
			return
		}
		outcome := &joinOutcome{}
		func() {
			defer l.joins.release()
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), joinOutcomeKey{}, outcome)))
		}()
		if outcome.failed {
			// Charged after the fact, so concurrent failures can take the bucket below zero:
			// the address then waits for as many refills. At most a burst of debt, so that
			// the address is refused for at most two bursts' refill after the flood ends.
			if now := j.clock.Now(); bucket.TokensAt(now) > -float64(bucket.Burst()) {
				bucket.ReserveN(now, 1)
			}
		}
	})
}
