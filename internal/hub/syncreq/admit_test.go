package syncreq

import (
	"fmt"
	"testing"
	"time"
)

// TestAdmit: an identical pending request is coalesced into (its id is the answer), and a
// request past the bound per release or per principal is refused naming the bound.
func TestAdmit(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	many := func(n int, f func(i int) Request) []Request {
		out := make([]Request, n)
		for i := range out {
			out[i] = f(i)
			out[i].ID = fmt.Sprintf("sync-%d", i)
			out[i].Created = now.Add(-time.Duration(n-i) * time.Second)
		}
		return out
	}
	web := Request{ID: "sync-new", Release: "web", Actor: "oidc:alice", Created: now}
	tests := []struct {
		name      string
		pending   []Request
		r         Request
		wantSame  string
		wantErr   string
		wantRetry time.Time
	}{
		{"nothing pending", nil, web, "", "", time.Time{}},
		{"an identical one is pending", []Request{{ID: "sync-1", Release: "web", Actor: "oidc:alice", Created: now.Add(-time.Minute)}}, web, "sync-1", "", time.Time{}},
		{"an identical one some clusters reported", []Request{{ID: "sync-1", Release: "web", Actor: "oidc:alice", Created: now, Reported: []string{"c1"}}}, web, "", "", time.Time{}},
		{"an identical one expired", []Request{{ID: "sync-1", Release: "web", Actor: "oidc:alice", Created: now.Add(-TTL)}}, web, "", "", time.Time{}},
		{"the same by another principal", []Request{{ID: "sync-1", Release: "web", Actor: "oidc:bob", Created: now}}, web, "", "", time.Time{}},
		{"an override is not a plain sync", []Request{{ID: "sync-1", Release: "web", Actor: "oidc:alice", Override: true, Reason: "x", Created: now}}, web, "", "", time.Time{}},
		{"the release's bound", many(MaxPendingPerRelease, func(i int) Request {
			return Request{Release: "web", Cluster: fmt.Sprintf("c%d", i), Actor: "oidc:bob"}
		}), web, "", `sync refused: release "web" has 20 pending sync requests, at most 20 (a request ends once every cluster reported it, or after 10m0s)`, now.Add(-20 * time.Second).Add(TTL)},
		{"the principal's bound", many(MaxPendingPerActor, func(i int) Request {
			return Request{Release: fmt.Sprintf("r%d", i), Actor: "oidc:alice"}
		}), web, "", `sync refused: oidc:alice has 50 pending sync requests, at most 50 (a request ends once every cluster reported it, or after 10m0s)`, now.Add(-50 * time.Second).Add(TTL)},
		{"every release's bound", many(MaxPendingPerRelease, func(i int) Request {
			return Request{Cluster: fmt.Sprintf("c%d", i), Actor: "token:ci"}
		}), Request{ID: "sync-new", Actor: "token:platform", Created: now}, "", `sync refused: every release has 20 pending sync requests, at most 20 (a request ends once every cluster reported it, or after 10m0s)`, now.Add(-20 * time.Second).Add(TTL)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			same, err := Admit(tt.pending, tt.r, now)
			gotSame, gotErr := "", ""
			if same != nil {
				gotSame = same.ID
			}
			if err != nil {
				gotErr = err.Error()
			}
			if gotSame != tt.wantSame || gotErr != tt.wantErr {
				t.Errorf("Admit: %q %q, want %q %q", gotSame, gotErr, tt.wantSame, tt.wantErr)
			}
			if ce, ok := err.(*CapError); ok && !ce.RetryAt.Equal(tt.wantRetry) {
				t.Errorf("RetryAt %v, want %v", ce.RetryAt, tt.wantRetry)
			}
		})
	}
}
