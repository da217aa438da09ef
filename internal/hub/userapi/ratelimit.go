package userapi

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/keyrate"
)

// The limit on each client address's device-flow sign-in calls (the limit on each
// principal's changing calls is the httpapi.Server's).
const (
	// A sign-in page polls every 5 seconds; a client address gets 1 call a second after 20.
	deviceAddrQPS   = 1.0
	deviceAddrBurst = 20
	// maxLimitKeys bounds the buckets kept; past it, new keys share one bucket.
	maxLimitKeys = 10000
)

func newDeviceAddrs(c clock.Clock) *keyrate.Buckets[netip.Prefix] {
	return keyrate.New[netip.Prefix](c, deviceAddrQPS, deviceAddrBurst, maxLimitKeys)
}

// limitDevice answers 429 with Retry-After, and returns false, to a client address past its
// bucket of device-flow sign-in calls: they need no token, and each makes the hub call the
// issuer. An IPv6 address counts by its /64.
func (api *API) limitDevice(w http.ResponseWriter, r *http.Request) bool {
	addr := keyrate.ClientPrefix(r.RemoteAddr)
	if wait, ok := keyrate.Take(api.d.Clock.Now(), api.deviceAddrs.Get(addr)); !ok {
		secs := httpapi.RetryAfter(w, wait)
		httpapi.WriteError(w, http.StatusTooManyRequests, fmt.Errorf("rate limit: more than %d sign-in calls from %s (%g a second sustained): retry in %d s",
			deviceAddrBurst, addr, deviceAddrQPS, secs))
		return false
	}
	return true
}
