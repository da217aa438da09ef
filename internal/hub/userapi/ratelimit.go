package userapi

import (
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/keyrate"
)

// Defaults of the limit on each principal's changing calls (Options.MutationQPS and
// MutationBurst), and of each client address's device-flow sign-in calls.
const (
	// DefaultMutationQPS and DefaultMutationBurst: a person or a CI job syncs, freezes or
	// plans a few times a minute; a script that loops on POST /api/v1/sync is refused after
	// 30 calls, then gets 2 a second.
	DefaultMutationQPS   = 2.0
	DefaultMutationBurst = 30
	// A sign-in page polls every 5 seconds; a client address gets 1 call a second after 20.
	deviceAddrQPS   = 1.0
	deviceAddrBurst = 20
	// maxLimitKeys bounds the buckets kept; past it, new keys share one bucket.
	maxLimitKeys = 10000
)

// limits are the user API's token buckets: changing calls per principal, device-flow sign-in
// calls per client address.
type limits struct {
	mutations   *keyrate.Buckets[string]
	mutationQPS float64
	burst       int
	device      *keyrate.Buckets[netip.Prefix]
}

func (api *API) newLimits() limits {
	qps, burst := api.o.MutationQPS, api.o.MutationBurst
	if qps <= 0 {
		qps = DefaultMutationQPS
	}
	if burst <= 0 {
		burst = DefaultMutationBurst
	}
	return limits{
		mutations: keyrate.New[string](api.d.Clock, qps, burst, maxLimitKeys), mutationQPS: qps, burst: burst,
		device: keyrate.New[netip.Prefix](api.d.Clock, deviceAddrQPS, deviceAddrBurst, maxLimitKeys),
	}
}

// limitMutations answers 429 with Retry-After to a principal past its bucket of changing
// calls (every method but GET and HEAD: sync, freeze, suspend, rollout actions, plan, token),
// before the route's handler runs: each such call writes records and audit entries and
// reschedules, and a plan renders.
func (api *API) limitMutations(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		p, _ := access.FromContext(r.Context())
		if wait, ok := take(api.d.Clock.Now(), api.limits.mutations.Get(p.Actor)); !ok {
			secs := RetryAfter(w, wait)
			writeError(w, http.StatusTooManyRequests, fmt.Errorf("rate limit: %s made more than %d changing calls at once (%g a second sustained; hub flags --api-burst, --api-qps): retry in %d s",
				p.Actor, api.limits.burst, api.limits.mutationQPS, secs))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitDevice answers 429 with Retry-After, and returns false, to a client address past its
// bucket of device-flow sign-in calls: they need no token, and each makes the hub call the
// issuer. An IPv6 address counts by its /64.
func (api *API) limitDevice(w http.ResponseWriter, r *http.Request) bool {
	addr := keyrate.ClientPrefix(r.RemoteAddr)
	if wait, ok := take(api.d.Clock.Now(), api.limits.device.Get(addr)); !ok {
		secs := RetryAfter(w, wait)
		writeError(w, http.StatusTooManyRequests, fmt.Errorf("rate limit: more than %d sign-in calls from %s (%g a second sustained): retry in %d s",
			deviceAddrBurst, addr, deviceAddrQPS, secs))
		return false
	}
	return true
}

// take takes a token of lim at now, or returns how long until one is there.
func take(now time.Time, lim *rate.Limiter) (time.Duration, bool) {
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

// RetryAfter sets Retry-After to wait in whole seconds, at least 1, and returns them.
func RetryAfter(w http.ResponseWriter, wait time.Duration) int {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return secs
}
