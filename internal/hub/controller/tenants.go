package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/project"
)

// A Project may name its team's own fleet repository (spec.fleet). The controller reads each
// one like the main fleet, on the same interval, and checks every object in it against the
// Project (v1alpha1.ParseTenant). A repository whose newest commit breaks a rule is rejected
// alone: its last valid configuration stays in force, the main fleet and the other teams'
// repositories are not affected, and the error is a scheduling problem that names the file
// at the commit. What is scheduled is the main fleet with every tenant's configuration in
// force added (merge).

// tenant is one Project's fleet repository as the controller knows it. Only the run
// goroutine uses it.
type tenant struct {
	project string
	// spec is the Project's spec the configuration in force was checked against; a change
	// has the repository read and checked again.
	spec v1alpha1.ProjectSpec
	// fleet is the configuration in force and commit its commit; nil and "" until one is.
	fleet  *v1alpha1.Fleet
	commit string
	// recheck has the commit in force read and checked again: the Project changed.
	recheck bool
	// rejected is the newest commit when its configuration was rejected ("" when the
	// repository could not be read at all), and err why; err is nil when the newest commit is
	// in force.
	rejected string
	err      error
	logged   string
}

// loadFleets reads the main fleet, then every tenant repository it names. It reports whether
// the configuration in force, or a tenant's error, changed.
func (c *Controller) loadFleets(ctx context.Context) bool {
	changed := c.loadFleet(ctx)
	return c.loadTenants(ctx) || changed
}

// loadTenants reads the tenant repositories the main fleet in force names, and forgets
// those it no longer names (their releases leave the clusters, as the platform decided).
func (c *Controller) loadTenants(ctx context.Context) bool {
	c.mu.Lock()
	main := c.fleet
	c.mu.Unlock()
	if main == nil {
		return false
	}
	if c.tenants == nil {
		c.tenants = map[string]*tenant{}
	}
	projects := map[string]v1alpha1.Project{}
	for _, p := range main.Projects {
		if p.Spec.Fleet != nil && p.Metadata.Name != v1alpha1.ProjectPlatform {
			projects[p.Metadata.Name] = p
		}
	}
	changed := false
	for name := range c.tenants {
		if _, ok := projects[name]; !ok {
			c.log.Info("project no longer has a fleet repository; its configuration is dropped", "project", name)
			delete(c.tenants, name)
			changed = true
		}
	}
	names := slices.Sorted(maps.Keys(projects))
	for _, name := range names {
		p := projects[name]
		t := c.tenants[name]
		if t == nil {
			t = &tenant{project: name}
			c.tenants[name] = t
		}
		if !reflect.DeepEqual(t.spec, p.Spec) {
			// Checked against other rules, or read from elsewhere: read and check again.
			t.spec, t.recheck, t.rejected = p.Spec, true, ""
		}
	}
	// Read every repository at once, so that one whose Git server hangs costs the loop its
	// timeout once, not once per tenant. Each read writes only its own slot and its own
	// tenant's rejected commit; the results are applied in order below.
	reads := make([]tenantRead, len(names))
	var g errgroup.Group
	g.SetLimit(maxTenantReads)
	for i, name := range names {
		g.Go(func() error {
			t := c.tenants[name]
			reads[i].fleet, reads[i].commit, reads[i].err = c.readTenant(ctx, t, projects[name], main)
			return nil
		})
	}
	_ = g.Wait()
	for i, name := range names {
		changed = c.loadTenant(ctx, c.tenants[name], projects[name], reads[i]) || changed
	}
	c.mu.Lock()
	stale := c.mergedFrom != main
	c.mu.Unlock()
	if changed || stale {
		c.merge(main)
	}
	return changed
}

// maxTenantReads bounds the tenant repositories read at once.
const maxTenantReads = 8

// tenantRead is what readTenant returned for one tenant.
type tenantRead struct {
	fleet  *v1alpha1.Fleet
	commit string
	err    error
}

// loadTenant applies what reading one tenant repository gave. It reports whether its
// configuration in force or its error changed.
func (c *Controller) loadTenant(ctx context.Context, t *tenant, p v1alpha1.Project, r tenantRead) bool {
	fleet, commit, err := r.fleet, r.commit, r.err
	prevErr := errorText(t.err)
	if err != nil {
		t.err = err
		if msg := err.Error(); msg != t.logged {
			c.log.Warn("tenant fleet configuration rejected; its last valid one stays in force",
				"project", t.project, "revision", t.commit, "error", err)
			t.logged = msg
		}
		return errorText(err) != prevErr
	}
	t.err, t.rejected, t.logged, t.recheck = nil, "", "", false
	if fleet == nil {
		return prevErr != "" // unchanged commit
	}
	prev := t.commit
	t.fleet, t.commit = fleet, commit
	if commit == prev {
		c.log.Info("tenant fleet configuration checked again against its changed Project", "project", t.project, "revision", commit)
		return true
	}
	c.log.Info("tenant fleet configuration loaded", "project", t.project, "revision", commit,
		"sources", len(fleet.Sources), "releases", len(fleet.Releases))
	c.d.Record(ctx, audit.Event{Actor: "hub", Action: "project.fleet.revision", Detail: map[string]any{
		"project": t.project, "revision": commit, "previous": prev, "fleet": source.Redact(p.Spec.Fleet.URL),
		"sources": len(fleet.Sources), "releases": len(fleet.Releases),
	}})
	return true
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// readTenant returns the tenant repository's configuration at its newest commit, or nil
// when that commit is the one in force.
func (c *Controller) readTenant(ctx context.Context, t *tenant, p v1alpha1.Project, main *v1alpha1.Fleet) (*v1alpha1.Fleet, string, error) {
	fl := p.Spec.Fleet
	g := source.Git{Name: "fleet of project " + t.project, URL: fl.URL, Branch: fl.Branch, Credentials: fl.Credentials, Insecure: fl.Insecure}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := c.d.Poller.Resolve(ctx, g)
	if err != nil {
		return nil, "", fmt.Errorf("fleet repository %s: %w", source.Redact(fl.URL), err)
	}
	if res.Commit == t.commit && !t.recheck {
		return nil, res.Commit, nil
	}
	if res.Commit == t.rejected && t.err != nil {
		return nil, "", t.err // the same commit is not checked out and checked again
	}
	dir, err := os.MkdirTemp(c.opts.WorkDir, "tenant-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	if err := c.d.Poller.Checkout(ctx, g, res.Commit, dir); err != nil {
		return nil, "", inRepository(err, dir, fl.URL, fl.Path, res.Commit)
	}
	root := filepath.Join(dir, filepath.FromSlash(fl.Path))
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("fleet path %q not found in %s@%s (spec.fleet.path of Project/%s)", fl.Path, source.Redact(fl.URL), shortCommit(res.Commit), t.project)
		t.rejected = res.Commit
		return nil, "", err
	}
	f, err := v1alpha1.LoadTenantDir(root, v1alpha1.Tenant{Project: p, Sources: main.Sources, Taken: c.takenNames(main, t.project)})
	if err != nil {
		t.rejected = res.Commit
		return nil, "", inRepository(err, dir, fl.URL, fl.Path, res.Commit)
	}
	return f, res.Commit, nil
}

// takenNames are the Source and Release names the main fleet and every other tenant's
// configuration in force define, with who defines them.
func (c *Controller) takenNames(main *v1alpha1.Fleet, except string) map[string]string {
	taken := map[string]string{}
	add := func(f *v1alpha1.Fleet, who string) {
		for _, s := range f.Sources {
			taken[v1alpha1.KindSource+"/"+s.Metadata.Name] = who
		}
		for _, r := range f.Releases {
			taken[v1alpha1.KindRelease+"/"+r.Metadata.Name] = who
		}
	}
	for name, t := range c.tenants {
		if name != except && t.fleet != nil {
			add(t.fleet, fmt.Sprintf("project %s's fleet repository", name))
		}
	}
	add(main, "the main fleet")
	return taken
}

// merge computes the fleet that is polled and scheduled: the main fleet, then each tenant's
// configuration in force, in project name order. A tenant object whose name the main fleet
// or an earlier tenant took since that configuration was checked is left out, with a
// problem: the platform's names win.
func (c *Controller) merge(main *v1alpha1.Fleet) {
	var problems []schedule.Problem
	merged := main
	if len(c.tenants) > 0 {
		merged = &v1alpha1.Fleet{
			Sources:       slices.Clone(main.Sources),
			Releases:      slices.Clone(main.Releases),
			Notifications: main.Notifications,
			Projects:      main.Projects,
			Windows:       main.Windows,
		}
		taken := map[string]string{}
		for _, s := range main.Sources {
			taken[v1alpha1.KindSource+"/"+s.Metadata.Name] = "the main fleet"
		}
		for _, r := range main.Releases {
			taken[v1alpha1.KindRelease+"/"+r.Metadata.Name] = "the main fleet"
		}
		for _, name := range slices.Sorted(maps.Keys(c.tenants)) {
			t := c.tenants[name]
			if t.fleet == nil {
				continue
			}
			who := fmt.Sprintf("project %s's fleet repository", name)
			use := func(kind, object string) bool {
				key := kind + "/" + object
				if by, ok := taken[key]; ok {
					problems = append(problems, schedule.Problem{Project: name, Message: fmt.Sprintf("%s@%s: %s is left out: %s defines it too", who, shortCommit(t.commit), key, by)})
					return false
				}
				taken[key] = who
				return true
			}
			for _, s := range t.fleet.Sources {
				if use(v1alpha1.KindSource, s.Metadata.Name) {
					merged.Sources = append(merged.Sources, s)
				}
			}
			for _, r := range t.fleet.Releases {
				if use(v1alpha1.KindRelease, r.Metadata.Name) {
					merged.Releases = append(merged.Releases, r)
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.tenants)) {
		t := c.tenants[name]
		if t.err == nil {
			continue
		}
		inForce := "no configuration of it is in force yet"
		if t.commit != "" {
			inForce = fmt.Sprintf("commit %s stays in force", shortCommit(t.commit))
		}
		for line := range strings.SplitSeq(t.err.Error(), "\n") {
			problems = append(problems, schedule.Problem{Project: name, Message: fmt.Sprintf("project %s's fleet repository rejected (%s): %s", name, inForce, line)})
		}
	}
	c.mu.Lock()
	c.merged, c.mergedFrom, c.tenantProblems = merged, main, problems
	c.mu.Unlock()
}

// keepUnloaded puts back, in every cluster's next document, the assignments of the projects
// whose fleet repository has no configuration in force in this controller yet (the hub just
// started or took the lease, and the repository could not be read): the releases are not in
// the scheduled fleet, but a repository that cannot be read must never prune anything. They
// carry the project's rules as the main fleet states them now.
func (c *Controller) keepUnloaded(plan *schedule.Plan, previous map[string]desired.Document) {
	unloaded := map[string]*project.Rules{} // with the project's rules as they are now
	for name, t := range c.tenants {
		if t.fleet == nil {
			r := project.FromSpec(name, t.spec)
			unloaded[name] = &r
		}
	}
	if len(unloaded) == 0 {
		return
	}
	for cluster, prev := range previous {
		assigned := plan.Assignments[cluster]
		var kept []string
		for _, a := range prev.Assignments {
			if a.Project == nil || unloaded[a.Project.Name] == nil ||
				slices.ContainsFunc(assigned, func(b desired.Assignment) bool { return b.Release == a.Release }) {
				continue
			}
			a.Project = unloaded[a.Project.Name]
			assigned = append(assigned, a)
			kept = append(kept, a.Release)
		}
		if len(kept) == 0 {
			continue
		}
		slices.SortFunc(assigned, func(a, b desired.Assignment) int { return strings.Compare(a.Release, b.Release) })
		plan.Assignments[cluster] = assigned
		plan.Removed[cluster] = slices.DeleteFunc(plan.Removed[cluster], func(t desired.Tombstone) bool { return slices.Contains(kept, t.Release) })
		if len(plan.Removed[cluster]) == 0 {
			delete(plan.Removed, cluster)
		}
	}
}

// scheduled is the fleet that is polled and scheduled: the main fleet in force with the
// tenants' configurations; nil until the main fleet loaded. Callers must not modify it.
func (c *Controller) scheduled() *v1alpha1.Fleet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scheduledLocked()
}

func (c *Controller) scheduledLocked() *v1alpha1.Fleet {
	if c.merged != nil && c.mergedFrom == c.fleet {
		return c.merged
	}
	return c.fleet
}
