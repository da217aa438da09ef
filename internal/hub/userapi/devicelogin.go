package userapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"golang.org/x/time/rate"

	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
)

// DeviceFlow runs the OIDC device flow at the issuer for a browser (access.OIDC): the
// dashboard cannot call the issuer's endpoints itself, as issuers seldom allow cross-origin
// requests.
type DeviceFlow interface {
	StartDevice(ctx context.Context) (access.DeviceStart, error)
	// PollDevice returns the verified ID token and its principal, access.ErrPending while
	// the user has not signed in, or why the sign-in failed.
	PollDevice(ctx context.Context, deviceCode string) (string, access.Principal, error)
}

// deviceLimit bounds the unauthenticated sign-in calls, each of which makes the hub call
// the issuer: a page polls every few seconds.
func newDeviceLimit() *rate.Limiter { return rate.NewLimiter(20, 40) }

func (api *API) deviceFlow(w http.ResponseWriter, r *http.Request) bool {
	if api.d.Device == nil {
		httpapi.WriteError(w, http.StatusNotFound, errors.New("this hub has no OIDC sign-in (--oidc-issuer)"))
		return false
	}
	if !api.limitDevice(w, r) {
		return false
	}
	if !api.deviceLimit.Allow() {
		w.Header().Set("Retry-After", "1")
		httpapi.WriteError(w, http.StatusTooManyRequests, errors.New("too many sign-in attempts; retry in a second"))
		return false
	}
	return true
}

// startDeviceLogin serves POST /api/v1/login/device: a device code for the dashboard.
func (api *API) startDeviceLogin(w http.ResponseWriter, r *http.Request) {
	if !api.deviceFlow(w, r) {
		return
	}
	s, err := api.d.Device.StartDevice(r.Context())
	if err != nil {
		api.d.Logger.Warn("oidc device sign-in", "error", err)
		httpapi.WriteError(w, http.StatusBadGateway, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, s)
}

// pollDeviceLogin serves POST /api/v1/login/device/token {"deviceCode": ...}: 202 while the
// user signs in, 200 {"token", "actor"} once done, 401 when the issuer or the hub refuses.
func (api *API) pollDeviceLogin(w http.ResponseWriter, r *http.Request) {
	if !api.deviceFlow(w, r) {
		return
	}
	var req struct {
		DeviceCode string `json:"deviceCode"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil || req.DeviceCode == "" {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("request body: want {\"deviceCode\": ...}"))
		return
	}
	tok, p, err := api.d.Device.PollDevice(r.Context(), req.DeviceCode)
	if errors.Is(err, access.ErrPending) {
		httpapi.WriteJSON(w, http.StatusAccepted, map[string]bool{"pending": true})
		return
	}
	if err != nil {
		httpapi.WriteError(w, http.StatusUnauthorized, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"token": tok, "actor": p.Actor, "role": p.Role()})
}
