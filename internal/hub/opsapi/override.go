package opsapi

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"slices"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/syncreq"
	"github.com/flotilla/flotilla/internal/window"
	"github.com/flotilla/flotilla/internal/window/hold"
)

// maxVerdictSteps bounds the instants checkOverride evaluates a window at over a request's
// life: each step is a window opening or closing, and a request lives minutes.
const maxVerdictSteps = 64

// checkOverride returns the refusal of an override of release on cluster ("" every cluster
// the release is on) by p, or "" when p may lift every gate that could hold it back.
//
// The agent passes every gate for the one reconcile an override asks for, so the hub decides
// here, when it is asked, whose gates these are: an override needs the rights to lift each
// gate that may hold the release back while the request lives. A freeze of the release alone,
// the release's own suspension, and a window covering only releases of projects p deploys
// are p's; a freeze of every release, a cluster's suspension and a window covering a
// project p does not deploy are not (they need an admin or a deployer of every project). A
// deployer of every project lifts anything.
func (a *API) checkOverride(ctx context.Context, p access.Principal, fleet *v1alpha1.Fleet, release, cluster string, now time.Time) (int, error) {
	if p.CanEverywhere(access.Deployer) {
		return 0, nil
	}
	clusters, err := a.d.Store.ListClusters(ctx)
	if err != nil {
		return http.StatusServiceUnavailable, fmt.Errorf("override: read the clusters: %w", err)
	}
	// The clusters the release is on, when their agents reported it; otherwise every cluster
	// it may be on (a refusal too many beats a gate passed).
	on := map[string]bool{}
	if reporting, err := a.d.Store.ClustersReporting(ctx, release); err == nil {
		for _, c := range reporting {
			on[c] = true
		}
	}
	freezes, err := a.d.Store.ListRecords(ctx, hold.RecordFreeze)
	if err != nil {
		return http.StatusServiceUnavailable, fmt.Errorf("override: read the freezes in force: %w", err)
	}
	suspended, err := a.d.Store.ListRecords(ctx, hold.RecordSuspend)
	if err != nil {
		return http.StatusServiceUnavailable, fmt.Errorf("override: read the suspended clusters: %w", err)
	}
	projects := map[string]string{}
	for _, r := range fleet.Releases {
		projects[r.Metadata.Name] = r.Spec.Project
	}
	until := now.Add(syncreq.TTL)
	for _, c := range clusters {
		if (cluster != "" && c.Name != cluster) || (cluster == "" && len(on) > 0 && !on[c.Name]) {
			continue
		}
		for _, rec := range suspended {
			if rec.Key == c.Name {
				return http.StatusForbidden, fmt.Errorf("override refused: suspension of cluster %q covers every project on it; lifting it needs an admin or a deployer of every project", c.Name)
			}
		}
		for _, rec := range freezes {
			f := decodeFreeze(rec)
			if f.Release != "" || !f.Covers(c.Labels) {
				continue // a freeze of one release: of this one (the route checked p deploys it) or of another
			}
			return http.StatusForbidden, fmt.Errorf("override refused: freeze %q covers every project; lifting it needs an admin or a deployer of every project", f.ID)
		}
		for _, w := range fleet.Windows {
			if !w.Spec.ClusterSelector.Matches(c.Labels) {
				continue
			}
			g := window.Gate{Name: w.Metadata.Name, Kind: window.KindWindow, Type: w.Spec.Type, Schedule: w.Spec.Schedule,
				Duration: w.Spec.Duration.Duration, TimeZone: w.Spec.TimeZone, Releases: w.Spec.Releases, Blocks: w.Spec.Blocks}
			if !holdsWithin([]window.Gate{g}, release, now, until) {
				continue
			}
			if other := foreignProject(p, w.Spec.Releases, projects); other != "" {
				return http.StatusForbidden, fmt.Errorf("override refused: window %q covers %s; lifting it needs an admin or a deployer of every project it covers", w.Metadata.Name, other)
			}
		}
	}
	return 0, nil
}

// foreignProject describes a project a window of releases (names or globs; none: every
// release) covers that p does not deploy, or returns "" when p deploys every one.
func foreignProject(p access.Principal, releases []string, projects map[string]string) string {
	if len(releases) == 0 {
		return "every project"
	}
	names := make([]string, 0, len(projects))
	for name := range projects {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, pattern := range releases {
			if ok, err := path.Match(pattern, name); (ok || err != nil) && !p.Can(access.Deployer, projects[name]) {
				return fmt.Sprintf("release %q of project %q", name, v1alpha1.ProjectOrPlatform(projects[name]))
			}
		}
	}
	return ""
}

// holdsWithin reports whether gates hold anything of release back at some instant of
// [now, until): at now, and at each instant the verdict may change.
func holdsWithin(gates []window.Gate, release string, now, until time.Time) bool {
	t := now
	for range maxVerdictSteps {
		v := window.Evaluate(gates, release, t)
		if v.Blocked() {
			return true
		}
		if v.Next.IsZero() || !v.Next.Before(until) || !v.Next.After(t) {
			return false
		}
		t = v.Next
	}
	return true // a window that changes this often is read as holding
}
