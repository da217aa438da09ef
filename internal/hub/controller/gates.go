package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/window"
	"github.com/flotilla/flotilla/internal/window/hold"
)

// applyGates puts into each cluster's document the gates that apply to it: the fleet's
// Windows whose clusterSelector matches it, freezes, its suspension, and suspended releases.
//
// Gates are sorted (kind, name, releases) so that an unchanged set encodes to the same bytes
// and raises no generation. Freezes and suspensions are read from the store; when a read
// fails, each cluster keeps the freezes (or its suspension) of its previous document, and a
// record that does not decode holds everything it could cover: a gate is never opened
// because the hub could not read it.
func (c *Controller) applyGates(ctx context.Context, fleet *v1alpha1.Fleet, clusters []schedule.Cluster, plan *schedule.Plan) {
	freezes, freezeErr := c.freezes(ctx)
	suspended, suspendErr := c.suspensions(ctx)
	if freezeErr != nil || suspendErr != nil {
		c.log.Error("freezes or suspended clusters not read; every cluster keeps those of its last desired state",
			"error", cmp.Or(freezeErr, suspendErr))
		c.retryGates(ctx)
	}
	var suspendedReleases []string
	for _, r := range fleet.Releases {
		if r.Spec.Suspend {
			suspendedReleases = append(suspendedReleases, r.Metadata.Name)
		}
	}
	if plan.Gates == nil {
		plan.Gates = make(map[string][]window.Gate, len(clusters))
	}
	for _, cl := range clusters {
		var gates []window.Gate
		for _, w := range fleet.Windows {
			if w.Spec.ClusterSelector.Matches(cl.Labels) {
				gates = append(gates, windowGate(w))
			}
		}
		prev := c.plan[cl.Name].Gates
		if freezeErr != nil {
			gates = append(gates, kept(prev, hold.IsFreeze)...)
		} else {
			for _, f := range freezes {
				if f.Covers(cl.Labels) {
					gates = append(gates, f.Gate())
				}
			}
		}
		if suspendErr != nil {
			gates = append(gates, kept(prev, hold.IsClusterSuspension)...)
		} else if s, ok := suspended[cl.Name]; ok {
			gates = append(gates, s.Gate())
		}
		for _, r := range suspendedReleases {
			if slices.ContainsFunc(plan.Assignments[cl.Name], func(a desired.Assignment) bool { return a.Release == r }) {
				gates = append(gates, window.Gate{Name: r, Kind: window.KindSuspend, Type: v1alpha1.WindowDeny, Releases: []string{r}})
			}
		}
		sortGates(gates)
		plan.Gates[cl.Name] = gates
	}
}

// freezes reads every freeze. A record that does not decode becomes a freeze of every
// release on every cluster, named by its key.
func (c *Controller) freezes(ctx context.Context) ([]hold.Freeze, error) {
	records, err := c.d.Store.ListRecords(ctx, hold.RecordFreeze)
	if err != nil {
		return nil, fmt.Errorf("list freezes: %w", err)
	}
	out := make([]hold.Freeze, 0, len(records))
	for _, r := range records {
		f, err := hold.DecodeFreeze(r.Key, r.Data, r.UpdatedAt)
		if err != nil {
			c.log.Error("freeze record does not decode; it freezes every release on every cluster until it is lifted", "freeze", r.Key, "error", err)
		}
		out = append(out, f)
	}
	return out, nil
}

// suspensions reads the suspended clusters by name. A record that does not decode
// suspends its cluster all the same.
func (c *Controller) suspensions(ctx context.Context) (map[string]hold.Suspension, error) {
	records, err := c.d.Store.ListRecords(ctx, hold.RecordSuspend)
	if err != nil {
		return nil, fmt.Errorf("list suspended clusters: %w", err)
	}
	out := make(map[string]hold.Suspension, len(records))
	for _, r := range records {
		s, err := hold.DecodeSuspension(r.Key, r.Data, r.UpdatedAt)
		if err != nil {
			c.log.Error("suspension record does not decode; the cluster stays suspended", "cluster", r.Key, "error", err)
		}
		out[r.Key] = s
	}
	return out, nil
}

// retryGates wakes the controller once more after retryAfterFailure, so that freezes and
// suspensions the store could not return are read again soon (the reschedule itself
// succeeded, so it sets no retry). Wakes coalesce: a failing store costs about one
// reschedule per interval, never a busy loop.
func (c *Controller) retryGates(ctx context.Context) {
	go func() {
		select {
		case <-ctx.Done():
		case <-c.clock.After(retryAfterFailure):
			c.Wake()
		}
	}()
}

// windowGate is the gate of a fleet Window.
func windowGate(w v1alpha1.Window) window.Gate {
	return window.Gate{
		Name: w.Metadata.Name, Kind: window.KindWindow, Type: w.Spec.Type,
		Schedule: w.Spec.Schedule, Duration: w.Spec.Duration.Duration, TimeZone: w.Spec.TimeZone,
		Releases: slices.Clone(w.Spec.Releases), Blocks: slices.Clone(w.Spec.Blocks),
	}
}

// kept returns the gates of prev that keep.
func kept(prev []window.Gate, keep func(window.Gate) bool) []window.Gate {
	var out []window.Gate
	for _, g := range prev {
		if keep(g) {
			out = append(out, g)
		}
	}
	return out
}

// sortGates orders gates by kind, name and releases: the document is compared byte for byte.
func sortGates(gates []window.Gate) {
	slices.SortStableFunc(gates, func(a, b window.Gate) int {
		return cmp.Or(
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(strings.Join(a.Releases, "\x00"), strings.Join(b.Releases, "\x00")),
		)
	})
}
