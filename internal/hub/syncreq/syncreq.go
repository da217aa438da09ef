// Package syncreq holds sync requests (`flotilla sync`) as the hub stores them, and decides
// without I/O which clusters' desired states carry each: Plan takes the stored requests, the
// clusters being scheduled with their assigned releases, the ids their agents reported and
// the time, and returns what the controller writes.
//
// A request names a release (or every release) and a cluster (or every cluster the release
// is assigned to). It is in the document of each such cluster until that cluster's agent
// reports its id in an assignment status (the agent acts on each id once), and it is deleted
// once every affected cluster reported it or TTL passed. A cluster that reported is
// remembered in the request, since the agent's next report replaces the status that carried
// the id.
package syncreq

import (
	"fmt"
	"slices"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
)

// Kind is the store record kind of sync requests, keyed by id.
const Kind = "sync"

// TTL is how long a request stays in the documents of the clusters that have not reported
// it: an agent away longer gets its changes at its next interval, not a stale sync.
const TTL = 10 * time.Minute

// Request is a sync request as the store keeps it (the record's data, JSON).
type Request struct {
	ID string `json:"id"`
	// Release is the release to reconcile; "": every release of the clusters.
	Release string `json:"release,omitempty"`
	// Cluster is the one cluster; "": every cluster the release is assigned to.
	Cluster string `json:"cluster,omitempty"`
	// Override lets this one sync pass the windows and freezes that hold the release back.
	Override bool      `json:"override,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Actor    string    `json:"actor"`
	Created  time.Time `json:"created"`
	// Reported are the clusters whose agent reported the id.
	Reported []string `json:"reported,omitempty"`
}

// Expires is when the request leaves every document.
func (r Request) Expires() time.Time { return r.Created.Add(TTL) }

// Expired reports whether the request is past TTL at now.
func (r Request) Expired(now time.Time) bool { return !now.Before(r.Expires()) }

// Cluster is a cluster being scheduled and the releases assigned to it.
type Cluster struct {
	Name     string
	Releases []string
}

// Outcome is what Plan decided.
type Outcome struct {
	// Syncs are the requests each cluster's document carries, by cluster, in the order of
	// the requests given.
	Syncs map[string][]desired.SyncRequest
	// Delete are the ids of the requests done (every affected cluster reported) or expired.
	Delete []string
	// Update are the requests that more clusters reported: to store again.
	Update []Request
	// NextExpiry is the earliest expiry of the requests kept; zero when none.
	NextExpiry time.Time
}

// Plan decides, at now, which clusters' documents carry which of reqs, given the ids each
// cluster's agent reported (reported[cluster][id]).
func Plan(reqs []Request, clusters []Cluster, reported map[string]map[string]bool, now time.Time) Outcome {
	var out Outcome
	for _, r := range reqs {
		if r.Expired(now) {
			out.Delete = append(out.Delete, r.ID)
			continue
		}
		pending, more := 0, false
		for _, cl := range clusters {
			if !r.affects(cl) || slices.Contains(r.Reported, cl.Name) {
				continue
			}
			if reported[cl.Name][r.ID] {
				r.Reported = append(r.Reported, cl.Name)
				more = true
				continue
			}
			pending++
			if out.Syncs == nil {
				out.Syncs = map[string][]desired.SyncRequest{}
			}
			out.Syncs[cl.Name] = append(out.Syncs[cl.Name], desired.SyncRequest{ID: r.ID, Release: r.Release, Override: r.Override, Actor: r.Actor})
		}
		if pending == 0 && !r.waits(clusters) {
			out.Delete = append(out.Delete, r.ID)
			continue
		}
		if more {
			out.Update = append(out.Update, r)
		}
		if out.NextExpiry.IsZero() || r.Expires().Before(out.NextExpiry) {
			out.NextExpiry = r.Expires()
		}
	}
	return out
}

// affects reports whether the request concerns the cluster.
func (r Request) affects(cl Cluster) bool {
	if r.Cluster != "" && r.Cluster != cl.Name {
		return false
	}
	if r.Release == "" {
		return r.Cluster != "" || len(cl.Releases) > 0
	}
	return slices.Contains(cl.Releases, r.Release)
}

// waits reports whether a request for one cluster is kept although no document carries it:
// its cluster is not being scheduled now (its stored document is unreadable, or it is being
// registered), and may be soon.
func (r Request) waits(clusters []Cluster) bool {
	return r.Cluster != "" && !slices.ContainsFunc(clusters, func(c Cluster) bool { return c.Name == r.Cluster })
}

// Bounds on pending requests: each one is in the documents of every cluster it affects until
// they report it, so requests are bounded where they are made.
const (
	// MaxPendingPerRelease bounds the pending requests of one release (or of every release,
	// Release "").
	MaxPendingPerRelease = 20
	// MaxPendingPerActor bounds the pending requests of one principal.
	MaxPendingPerActor = 50
)

// CapError is a refusal of a request past a bound; RetryAt is when the oldest request that
// counts against it expires.
type CapError struct {
	Msg     string
	RetryAt time.Time
}

func (e *CapError) Error() string { return e.Msg }

// Admit decides, at now, on r given the requests pending: the pending request identical to r
// (same release, cluster, override, reason and actor, and no cluster has reported it yet),
// which r coalesces into; or a *CapError when r would pass MaxPendingPerRelease or
// MaxPendingPerActor; or neither, and r is stored.
func Admit(pending []Request, r Request, now time.Time) (*Request, error) {
	var release, actor []Request
	for i := range pending {
		p := pending[i]
		if p.Expired(now) {
			continue
		}
		if p.Release == r.Release && p.Cluster == r.Cluster && p.Override == r.Override && p.Reason == r.Reason &&
			p.Actor == r.Actor && len(p.Reported) == 0 {
			return &pending[i], nil
		}
		if p.Release == r.Release {
			release = append(release, p)
		}
		if p.Actor == r.Actor {
			actor = append(actor, p)
		}
	}
	capped := func(who string, reqs []Request, max int) error {
		return &CapError{RetryAt: oldestExpiry(reqs), Msg: fmt.Sprintf(
			"sync refused: %s has %d pending sync requests, at most %d (a request ends once every cluster reported it, or after %s)", who, len(reqs), max, TTL)}
	}
	switch {
	case len(release) >= MaxPendingPerRelease:
		name := "every release"
		if r.Release != "" {
			name = fmt.Sprintf("release %q", r.Release)
		}
		return nil, capped(name, release, MaxPendingPerRelease)
	case len(actor) >= MaxPendingPerActor:
		return nil, capped(r.Actor, actor, MaxPendingPerActor)
	}
	return nil, nil
}

func oldestExpiry(reqs []Request) time.Time {
	var t time.Time
	for _, r := range reqs {
		if t.IsZero() || r.Expires().Before(t) {
			t = r.Expires()
		}
	}
	return t
}
