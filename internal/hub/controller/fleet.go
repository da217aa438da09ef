package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// loadFleet reads the fleet configuration; an invalid one is reported and the last valid one
// stays in force. It reports whether the configuration in force changed.
func (c *Controller) loadFleet(ctx context.Context) bool {
	fleet, rev, err := c.readFleet(ctx)
	st := store.FleetStatus{UpdatedAt: c.clock.Now()}
	c.mu.Lock()
	if err != nil {
		st.Revision, st.Error = c.fleetRev, err.Error()
		c.mu.Unlock()
		c.log.Warn("fleet configuration rejected; the last valid one stays in force", "error", err)
		c.putFleetStatus(ctx, st)
		return false
	}
	st.Revision = rev
	if rev == c.fleetRev {
		c.mu.Unlock()
		c.putFleetStatus(ctx, st)
		return false
	}
	c.log.Info("fleet configuration loaded", "revision", rev, "sources", len(fleet.Sources), "releases", len(fleet.Releases))
	prev := c.fleetRev
	c.fleet, c.fleetRev = fleet, rev
	c.mu.Unlock()
	c.putFleetStatus(ctx, st)
	d := map[string]any{"revision": rev, "previous": prev, "fleet": c.opts.Fleet, "sources": len(fleet.Sources), "releases": len(fleet.Releases)}
	if fc := c.fleetCommit; fc.Commit != "" && strings.Contains(rev, fc.Commit) {
		d["author"], d["message"] = fc.Author, fc.Message
	}
	c.d.Record(ctx, audit.Event{Actor: "hub", Action: "fleet.revision", Detail: d})
	return true
}

func (c *Controller) putFleetStatus(ctx context.Context, st store.FleetStatus) {
	if err := c.d.Store.PutFleetStatus(ctx, st); err != nil {
		c.log.Warn("store fleet status", "revision", st.Revision, "error", err)
	}
}

func (c *Controller) readFleet(ctx context.Context) (*v1alpha1.Fleet, string, error) {
	o := c.opts
	if st, err := os.Stat(o.Fleet); err == nil && st.IsDir() {
		rev, err := v1alpha1.DirRevision(o.Fleet)
		if err != nil {
			return nil, "", err
		}
		if rev == c.currentFleetRev() {
			return nil, rev, nil // unchanged: not re-parsed
		}
		f, err := v1alpha1.LoadDir(o.Fleet)
		return f, rev, err
	}
	g := source.Git{Name: "fleet", URL: o.Fleet, Branch: o.FleetBranch}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := c.d.Poller.Resolve(ctx, g)
	if err != nil {
		return nil, "", err
	}
	c.fleetCommit = res
	if res.Commit == c.currentFleetRev() {
		return nil, res.Commit, nil
	}
	if r := c.rejected; r.commit == res.Commit {
		return nil, "", r.err // the same commit is not checked out and parsed again
	}
	dir, err := os.MkdirTemp(o.WorkDir, "fleet-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	if err := c.d.Poller.Checkout(ctx, g, res.Commit, dir); err != nil {
		return nil, "", err
	}
	f, err := v1alpha1.LoadDir(filepath.Join(dir, filepath.FromSlash(o.FleetPath)))
	if err != nil {
		// Files are named as in the repository, not by the temporary checkout: the message
		// is what users read in `flotilla status` and the dashboard.
		err = errors.New(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
		c.rejected.commit, c.rejected.err = res.Commit, err
	}
	return f, res.Commit, err
}

func (c *Controller) currentFleetRev() string {
	// Only the run goroutine writes fleetRev (under c.mu, for readers elsewhere) and only it
	// calls this, so the read needs no lock.
	return c.fleetRev
}
