package syncreq

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/desired"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	clusters := []Cluster{
		{Name: "c1", Releases: []string{"baseline", "web"}},
		{Name: "c2", Releases: []string{"baseline"}},
		{Name: "c3"}, // nothing assigned
	}
	req := func(id, release, cluster string, age time.Duration, reported ...string) Request {
		return Request{ID: id, Release: release, Cluster: cluster, Actor: "token:ops", Created: now.Add(-age), Reported: reported}
	}
	sync := func(id, release string) desired.SyncRequest {
		return desired.SyncRequest{ID: id, Release: release, Actor: "token:ops"}
	}
	tests := []struct {
		name     string
		reqs     []Request
		reported map[string]map[string]bool
		want     Outcome
	}{
		{
			name: "a release on every cluster it is assigned to",
			reqs: []Request{req("s1", "baseline", "", time.Minute)},
			want: Outcome{Syncs: map[string][]desired.SyncRequest{"c1": {sync("s1", "baseline")}, "c2": {sync("s1", "baseline")}},
				NextExpiry: now.Add(TTL - time.Minute)},
		},
		{
			name: "every release of one cluster, and every release everywhere (not c3, which has none)",
			reqs: []Request{req("s1", "", "c2", 0), req("s2", "", "", 0)},
			want: Outcome{Syncs: map[string][]desired.SyncRequest{"c1": {sync("s2", "")}, "c2": {sync("s1", ""), sync("s2", "")}},
				NextExpiry: now.Add(TTL)},
		},
		{
			name: "an override is carried as such",
			reqs: []Request{{ID: "s1", Release: "web", Cluster: "c1", Override: true, Reason: "hotfix", Actor: "oidc:alice", Created: now}},
			want: Outcome{Syncs: map[string][]desired.SyncRequest{"c1": {{ID: "s1", Release: "web", Override: true, Actor: "oidc:alice"}}},
				NextExpiry: now.Add(TTL)},
		},
		{
			name:     "a cluster that reported the id no longer carries it, and the request remembers it",
			reqs:     []Request{req("s1", "baseline", "", 0)},
			reported: map[string]map[string]bool{"c1": {"s1": true}, "c2": {"other": true}},
			want: Outcome{Syncs: map[string][]desired.SyncRequest{"c2": {sync("s1", "baseline")}},
				Update: []Request{req("s1", "baseline", "", 0, "c1")}, NextExpiry: now.Add(TTL)},
		},
		{
			name: "a cluster remembered as reported stays done, whatever its status says now",
			reqs: []Request{req("s1", "baseline", "", 0, "c1")},
			want: Outcome{Syncs: map[string][]desired.SyncRequest{"c2": {sync("s1", "baseline")}}, NextExpiry: now.Add(TTL)},
		},
		{
			name:     "done once every affected cluster reported",
			reqs:     []Request{req("s1", "baseline", "", 0, "c1")},
			reported: map[string]map[string]bool{"c2": {"s1": true}},
			want:     Outcome{Delete: []string{"s1"}},
		},
		{
			name: "expired at TTL, reported or not",
			reqs: []Request{req("s1", "baseline", "", TTL), req("s2", "baseline", "", TTL-time.Second)},
			want: Outcome{Syncs: map[string][]desired.SyncRequest{"c1": {sync("s2", "baseline")}, "c2": {sync("s2", "baseline")}},
				Delete: []string{"s1"}, NextExpiry: now.Add(time.Second)},
		},
		{
			name: "a release no cluster holds concerns nothing: deleted",
			reqs: []Request{req("s1", "nope", "", 0), req("s2", "web", "c2", 0)},
			want: Outcome{Delete: []string{"s1", "s2"}},
		},
		{
			name: "a cluster not being scheduled keeps its request for later",
			reqs: []Request{req("s1", "", "c9", 0)},
			want: Outcome{NextExpiry: now.Add(TTL)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.reqs, clusters, tt.reported, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
}
