package controller

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/webhook"
)

// KindSync is the store record kind of sync requests (`flotilla sync`), keyed by id.
const KindSync = "sync"

// KindPollRequest is the store record kind of a webhook's poll taken by a replica that does
// not hold the lease, keyed by source name: the replica that does polls it.
const KindPollRequest = "poll-request"

// SyncTTL is how long a sync request stays in the documents of the clusters that have not
// reported it: an agent away longer gets its changes at its next interval, not a stale sync.
const SyncTTL = 10 * time.Minute

// SyncRecord is a sync request as the store keeps it (Record.Data).
type SyncRecord struct {
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
	// Reported are the clusters whose agent reported the id: kept here because the status
	// that carried it is replaced by the agent's next report.
	Reported []string `json:"reported,omitempty"`
}

// Expired reports whether the request is past SyncTTL at now.
func (r SyncRecord) Expired(now time.Time) bool { return !now.Before(r.Created.Add(SyncTTL)) }

// applySyncs puts each cluster's pending sync requests into its document: the requests of
// kind KindSync that name the cluster (or every cluster) and a release the cluster is
// assigned (or every release), until the cluster's agent has reported the request's id in an
// assignment status, or the request expires (SyncTTL). A request every affected cluster has
// reported, or that expired, is deleted. When the requests cannot be read, each cluster
// keeps the requests its stored document holds: a failed read neither drops nor adds any.
//
// It also takes the webhook polls that another replica stored (KindPollRequest): this
// replica holds the lease, so it polls them.
func (c *Controller) applySyncs(ctx context.Context, clusters []schedule.Cluster, plan *schedule.Plan) {
	c.takePollRequests(ctx)
	recs, err := c.d.Store.ListRecords(ctx, KindSync)
	if err != nil {
		c.log.Warn("read sync requests; every cluster keeps the ones it has", "error", err)
		for _, cl := range clusters {
			c.setSyncs(plan, cl.Name, c.plan[cl.Name].Syncs)
		}
		return
	}
	if len(recs) == 0 {
		return
	}
	reported, err := c.reportedSyncs(ctx)
	if err != nil {
		c.log.Warn("read assignment statuses for sync requests; every cluster keeps the ones it has", "error", err)
		for _, cl := range clusters {
			c.setSyncs(plan, cl.Name, c.plan[cl.Name].Syncs)
		}
		return
	}
	now := c.clock.Now()
	for _, rec := range recs {
		var r SyncRecord
		if err := json.Unmarshal(rec.Data, &r); err != nil || r.ID == "" {
			c.log.Error("sync request does not decode; deleted", "id", rec.Key, "error", err)
			c.deleteSync(ctx, rec)
			continue
		}
		if r.Expired(now) {
			c.log.Info("sync request expired", "id", r.ID, "release", r.Release, "cluster", r.Cluster, "actor", r.Actor)
			c.deleteSync(ctx, rec)
			continue
		}
		pending, newlyReported := 0, false
		for _, cl := range clusters {
			if !r.affects(cl.Name, plan.Assignments[cl.Name]) || slices.Contains(r.Reported, cl.Name) {
				continue
			}
			if reported[cl.Name][r.ID] {
				r.Reported = append(r.Reported, cl.Name)
				newlyReported = true
				continue
			}
			pending++
			c.setSyncs(plan, cl.Name, append(plan.Syncs[cl.Name], schedule.SyncRequest{
				ID: r.ID, Release: r.Release, Override: r.Override, Actor: r.Actor,
			}))
		}
		if pending == 0 && !r.waits(clusters) {
			c.log.Info("sync request done: every affected agent reported it", "id", r.ID, "release", r.Release, "cluster", r.Cluster)
			c.deleteSync(ctx, rec)
			continue
		}
		if newlyReported {
			c.putSync(ctx, rec, r)
		}
		c.wakeAt(ctx, r.Created.Add(SyncTTL))
	}
}

// putSync stores r over rec, unless rec changed since (the next reschedule tries again).
func (c *Controller) putSync(ctx context.Context, rec store.Record, r SyncRecord) {
	data, err := json.Marshal(r)
	if err == nil {
		rec.Data = data
		_, err = c.d.Store.PutRecord(ctx, rec, rec.Version)
	}
	if err != nil && !errors.Is(err, store.ErrConflict) {
		c.log.Warn("store the clusters that reported a sync request", "id", r.ID, "error", err)
	}
}

// wakeAt has the controller reschedule at t (a sync request's expiry), so that an expired
// request leaves the documents even when nothing else changes; one wake-up is pending at a
// time, the earliest.
func (c *Controller) wakeAt(ctx context.Context, t time.Time) {
	now := c.clock.Now()
	if !c.syncWake.IsZero() && c.syncWake.After(now) && !t.Before(c.syncWake) {
		return
	}
	c.syncWake = t
	go func() {
		select {
		case <-c.clock.After(t.Sub(now)):
			c.Wake()
		case <-ctx.Done():
		}
	}()
}

// affects reports whether the request concerns the cluster, which holds assigned.
func (r SyncRecord) affects(cluster string, assigned []schedule.Assignment) bool {
	if r.Cluster != "" && r.Cluster != cluster {
		return false
	}
	if r.Release == "" {
		return r.Cluster != "" || len(assigned) > 0
	}
	return slices.ContainsFunc(assigned, func(a schedule.Assignment) bool { return a.Release == r.Release })
}

// waits reports whether a request for one cluster must be kept although no document holds
// it: its cluster is not scheduled right now (its document is unreadable, or it is being
// registered), and may be soon.
func (r SyncRecord) waits(clusters []schedule.Cluster) bool {
	return r.Cluster != "" && !slices.ContainsFunc(clusters, func(c schedule.Cluster) bool { return c.Name == r.Cluster })
}

func (c *Controller) setSyncs(plan *schedule.Plan, cluster string, syncs []schedule.SyncRequest) {
	if len(syncs) == 0 {
		return
	}
	if plan.Syncs == nil {
		plan.Syncs = map[string][]schedule.SyncRequest{}
	}
	plan.Syncs[cluster] = syncs
}

func (c *Controller) deleteSync(ctx context.Context, rec store.Record) {
	if err := c.d.Store.DeleteRecord(ctx, rec.Kind, rec.Key, rec.Version); err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
		c.log.Warn("delete sync request", "id", rec.Key, "error", err)
	}
}

// reportedSyncs returns, by cluster, the sync ids its agent reported in an assignment status.
func (c *Controller) reportedSyncs(ctx context.Context) (map[string]map[string]bool, error) {
	sts, err := c.d.Store.ListStatuses(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for _, st := range sts {
		var d struct {
			SyncID string `json:"syncId"`
		}
		if len(st.Detail) == 0 || json.Unmarshal(st.Detail, &d) != nil || d.SyncID == "" {
			continue
		}
		if out[st.Cluster] == nil {
			out[st.Cluster] = map[string]bool{}
		}
		out[st.Cluster][d.SyncID] = true
	}
	return out, nil
}

// PollNow polls at once the Git sources whose repository is url (compared by webhook.Key)
// and that ref may have moved (webhook.Follows: ref is "refs/heads/BRANCH", "refs/tags/TAG",
// or "" for every source of the repository), and returns their names. The poll restarts the
// source's interval; a source already being polled is polled again once that poll is done,
// since it may have read the ref before the push. On a replica that does not hold the lease,
// the poll is stored for the replica that does (applySyncs takes it at its next reschedule,
// which the caller's wake-up across replicas starts).
func (c *Controller) PollNow(url, ref string) []string {
	fleet := c.scheduled()
	if fleet == nil {
		return nil
	}
	var names []string
	for _, s := range fleet.Sources {
		g := s.Spec.Git
		if g == nil || !webhook.SameRepository(g.URL, url) || !webhook.Follows(ref, g.Branch, g.Tag, g.Semver, g.Commit) {
			continue
		}
		names = append(names, s.Metadata.Name)
	}
	if len(names) == 0 {
		return nil
	}
	if !c.d.Lease.Held() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, n := range names {
			rec := store.Record{Kind: KindPollRequest, Key: n, Data: []byte(`{}`)}
			if _, err := c.d.Store.PutRecord(ctx, rec, store.AnyVersion); err != nil {
				c.log.Warn("store a webhook's poll for the replica that polls", "source", n, "error", err)
			}
		}
		return names
	}
	c.markUrgent(names...)
	c.Wake()
	return names
}

// markUrgent has the next round of the run loop poll the sources whatever their interval.
func (c *Controller) markUrgent(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.urgent == nil {
		c.urgent = map[string]bool{}
	}
	for _, n := range names {
		c.urgent[n] = true
	}
}

// takeUrgent returns the sources to poll now, and forgets them.
func (c *Controller) takeUrgent() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.urgent
	c.urgent = nil
	return u
}

// takePollRequests moves the polls other replicas stored into this replica's urgent set.
func (c *Controller) takePollRequests(ctx context.Context) {
	recs, err := c.d.Store.ListRecords(ctx, KindPollRequest)
	if err != nil || len(recs) == 0 {
		return
	}
	var names []string
	for _, r := range recs {
		if err := c.d.Store.DeleteRecord(ctx, r.Kind, r.Key, r.Version); err == nil {
			names = append(names, r.Key)
		}
	}
	if len(names) > 0 {
		c.log.Info("polling sources a webhook named at another replica", "sources", names)
		c.markUrgent(names...)
		c.Wake()
	}
}
