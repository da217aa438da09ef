package controller

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/syncreq"
	"github.com/flotilla/flotilla/internal/hub/webhook"
)

// KindPollRequest is the store record kind of a webhook's poll taken by a replica that does
// not hold the lease, keyed by source name: the replica that does polls it.
const KindPollRequest = "poll-request"

// applySyncs puts each cluster's pending sync requests (records of kind syncreq.Kind) into
// its document, as syncreq.Plan decides, deletes the requests done or expired, stores those
// more clusters reported, and wakes the controller at the next expiry, so that an expired
// request leaves the documents even when nothing else changes. When the requests or the
// statuses cannot be read, each cluster keeps the requests its stored document holds: a
// failed read neither drops nor adds any.
//
// It also takes the webhook polls that another replica stored (KindPollRequest): this
// replica holds the lease, so it polls them.
func (c *Controller) applySyncs(ctx context.Context, clusters []schedule.Cluster, plan *schedule.Plan) {
	c.takePollRequests(ctx)
	keep := func(what string, err error) {
		c.log.Warn("read "+what+"; every cluster keeps the sync requests it has", "error", err)
		for _, cl := range clusters {
			if syncs := c.plan[cl.Name].Syncs; len(syncs) > 0 {
				setSyncs(plan, cl.Name, syncs)
			}
		}
	}
	recs, err := c.d.Store.ListRecords(ctx, syncreq.Kind)
	if err != nil {
		keep("sync requests", err)
		return
	}
	if len(recs) == 0 {
		return
	}
	reported, err := c.reportedSyncs(ctx)
	if err != nil {
		keep("assignment statuses for sync requests", err)
		return
	}
	reqs := make([]syncreq.Request, 0, len(recs))
	byID := make(map[string]store.Record, len(recs))
	for _, rec := range recs {
		var r syncreq.Request
		if err := json.Unmarshal(rec.Data, &r); err != nil || r.ID != rec.Key {
			c.log.Error("sync request does not decode; deleted", "id", rec.Key, "error", err)
			c.deleteSync(ctx, rec)
			continue
		}
		reqs = append(reqs, r)
		byID[r.ID] = rec
	}
	in := make([]syncreq.Cluster, len(clusters))
	for i, cl := range clusters {
		in[i].Name = cl.Name
		for _, a := range plan.Assignments[cl.Name] {
			in[i].Releases = append(in[i].Releases, a.Release)
		}
	}
	out := syncreq.Plan(reqs, in, reported, c.clock.Now())
	for cl, syncs := range out.Syncs {
		setSyncs(plan, cl, syncs)
	}
	for _, id := range out.Delete {
		c.log.Info("sync request done (every affected agent reported it) or expired", "id", id)
		c.deleteSync(ctx, byID[id])
	}
	for _, r := range out.Update {
		rec := byID[r.ID]
		data, err := json.Marshal(r)
		if err == nil {
			rec.Data = data
			_, err = c.d.Store.PutRecord(ctx, rec, rec.Version)
		}
		if err != nil && !errors.Is(err, store.ErrConflict) { // a conflict: the next reschedule tries again
			c.log.Warn("store the clusters that reported a sync request", "id", r.ID, "error", err)
		}
	}
	if !out.NextExpiry.IsZero() {
		c.wakeAt(ctx, out.NextExpiry)
	}
}

func setSyncs(plan *schedule.Plan, cluster string, syncs []desired.SyncRequest) {
	if plan.Syncs == nil {
		plan.Syncs = map[string][]desired.SyncRequest{}
	}
	plan.Syncs[cluster] = syncs
}

func (c *Controller) deleteSync(ctx context.Context, rec store.Record) {
	if err := c.d.Store.DeleteRecord(ctx, rec.Kind, rec.Key, rec.Version); err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
		c.log.Warn("delete sync request", "id", rec.Key, "error", err)
	}
}

// wakeAt has the controller reschedule at t; one wake-up is pending at a time, the earliest.
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
