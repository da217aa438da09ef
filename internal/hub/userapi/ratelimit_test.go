package userapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hubapi"
)

type limitAuth map[string]access.Principal

func (a limitAuth) Authenticate(_ context.Context, bearer string) (access.Principal, error) {
	if p, ok := a[bearer]; ok {
		return p, nil
	}
	return access.Principal{}, access.ErrUnauthenticated
}

type noDevice struct{}

func (noDevice) StartDevice(context.Context) (access.DeviceStart, error) {
	return access.DeviceStart{}, nil
}

func (noDevice) PollDevice(context.Context, string) (string, access.Principal, error) {
	return "", access.Principal{}, errors.New("no")
}

// TestRateLimits: a principal past its burst of changing calls, and a client address past its
// burst of device-flow sign-in calls, get 429 with Retry-After and a message naming the limit,
// other principals and reads are untouched, and the bucket refills with the clock.
func TestRateLimits(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC))
	served := 0
	count := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++; w.WriteHeader(http.StatusAccepted) })
	api := New(Deps{
		View:  func() controller.View { return controller.View{} },
		Clock: clk, Device: noDevice{},
		Auth: limitAuth{
			"alice": {Actor: "oidc:alice", Grants: []access.Grant{{Role: access.Deployer}}},
			"bob":   {Actor: "oidc:bob", Grants: []access.Grant{{Role: access.Deployer}}},
		},
		Extra: []Route{
			{Pattern: "POST /api/v1/sync", Rule: RuleDeployFleet, Handler: count},
			{Pattern: "GET /api/v1/freezes", Rule: RuleView, Handler: count},
		},
	}, Options{MutationQPS: 0.5, MutationBurst: 3})
	h := api.Handler()
	call := func(method, path, token, remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(`{}`))
		req.RemoteAddr = remote
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	type step struct {
		name, method, path, token, remote string
		advance                           time.Duration
		status                            int
		retryAfter, want                  string
	}
	const mutationRefusal = "rate limit: oidc:alice made more than 3 changing calls at once (0.5 a second sustained; hub flags --api-burst, --api-qps): retry in 2 s"
	steps := []step{
		{"alice 1", "POST", "/api/v1/sync", "alice", "192.0.2.1:1", 0, http.StatusAccepted, "", ""},
		{"alice 2", "POST", "/api/v1/sync", "alice", "192.0.2.1:1", 0, http.StatusAccepted, "", ""},
		{"alice 3", "POST", "/api/v1/sync", "alice", "192.0.2.1:1", 0, http.StatusAccepted, "", ""},
		{"alice 4: past the burst", "POST", "/api/v1/sync", "alice", "192.0.2.1:1", 0, http.StatusTooManyRequests, "2", mutationRefusal},
		{"alice again: a refusal costs no token", "POST", "/api/v1/sync", "alice", "192.0.2.1:1", 0, http.StatusTooManyRequests, "2", mutationRefusal},
		{"alice reads", "GET", "/api/v1/freezes", "alice", "192.0.2.1:1", 0, http.StatusAccepted, "", ""},
		{"bob has his own bucket", "POST", "/api/v1/sync", "bob", "192.0.2.1:1", 0, http.StatusAccepted, "", ""},
		{"alice after 2 s", "POST", "/api/v1/sync", "alice", "192.0.2.1:1", 2 * time.Second, http.StatusAccepted, "", ""},
		{"alice right after", "POST", "/api/v1/sync", "alice", "192.0.2.1:1", 0, http.StatusTooManyRequests, "2", mutationRefusal},
	}
	for i := range deviceAddrBurst {
		steps = append(steps, step{"sign-in " + string(rune('a'+i)), "POST", "/api/v1/login/device", "", "198.51.100.7:4000", 0, http.StatusOK, "", ""})
	}
	steps = append(steps,
		step{"sign-in past the burst of an address", "POST", "/api/v1/login/device", "", "198.51.100.7:4001", 0, http.StatusTooManyRequests, "1",
			"rate limit: more than 20 sign-in calls from 198.51.100.7/32 (1 a second sustained): retry in 1 s"},
		step{"polls from the same address", "POST", "/api/v1/login/device/token", "", "198.51.100.7:4002", 0, http.StatusTooManyRequests, "1",
			"rate limit: more than 20 sign-in calls from 198.51.100.7/32 (1 a second sustained): retry in 1 s"},
		step{"another address", "POST", "/api/v1/login/device", "", "203.0.113.9:4000", 0, http.StatusOK, "", ""},
	)
	for _, s := range steps {
		clk.Advance(s.advance)
		rec := call(s.method, s.path, s.token, s.remote)
		var e hubapi.APIError
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		if rec.Code != s.status || e.Error != s.want || rec.Header().Get("Retry-After") != s.retryAfter {
			t.Errorf("%s: status %d %q Retry-After %q, want %d %q %q", s.name, rec.Code, e.Error, rec.Header().Get("Retry-After"), s.status, s.want, s.retryAfter)
		}
	}
	if served != 6 {
		t.Errorf("the handlers ran %d times, want 6 (no refused call reaches them)", served)
	}
}
