package userapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hubclient"
)

type noDevice struct{}

func (noDevice) StartDevice(context.Context) (access.DeviceStart, error) {
	return access.DeviceStart{}, nil
}

func (noDevice) PollDevice(context.Context, string) (string, access.Principal, error) {
	return "", access.Principal{}, errors.New("no")
}

// TestDeviceSignInRateLimit: a client address past its burst of device-flow sign-in calls
// gets 429 with Retry-After and a message naming the limit, its polls count against the same
// bucket, and other addresses are untouched. (Each principal's limit on changing calls is
// the httpapi.Server's, tested there.)
func TestDeviceSignInRateLimit(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC))
	api := New(Deps{
		View:  func() controller.View { return controller.View{} },
		Clock: clk, Device: noDevice{},
	}, Options{})
	h := serve(api, adminToken(t, "secret"))
	call := func(path, remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(t.Context(), "POST", path, nil)
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	type step struct {
		name, path, remote string
		status             int
		retryAfter, want   string
	}
	var steps []step
	for i := range deviceAddrBurst {
		steps = append(steps, step{"sign-in " + string(rune('a'+i)), "/api/v1/login/device", "198.51.100.7:4000", http.StatusOK, "", ""})
	}
	const refusal = "rate limit: more than 20 sign-in calls from 198.51.100.7/32 (1 a second sustained): retry in 1 s"
	steps = append(steps,
		step{"sign-in past the burst of an address", "/api/v1/login/device", "198.51.100.7:4001", http.StatusTooManyRequests, "1", refusal},
		step{"polls from the same address", "/api/v1/login/device/token", "198.51.100.7:4002", http.StatusTooManyRequests, "1", refusal},
		step{"another address", "/api/v1/login/device", "203.0.113.9:4000", http.StatusOK, "", ""},
	)
	for _, s := range steps {
		rec := call(s.path, s.remote)
		var e hubclient.APIError
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		if rec.Code != s.status || e.Error != s.want || rec.Header().Get("Retry-After") != s.retryAfter {
			t.Errorf("%s: status %d %q Retry-After %q, want %d %q %q", s.name, rec.Code, e.Error, rec.Header().Get("Retry-After"), s.status, s.want, s.retryAfter)
		}
	}
}
