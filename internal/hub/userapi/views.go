package userapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/fleetview"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// errUnknown marks a view asked for a release or cluster the hub does not know: the API
// answers 404 with its message.
type errUnknown struct{ msg string }

func (e errUnknown) Error() string { return e.msg }

// FleetStatus computes the whole fleet's status from the store, the scheduler's desired
// states and the last-seen times: the one view that status, the dashboard and notifications
// share.
func (api *API) FleetStatus(ctx context.Context) (hubclient.StatusView, error) {
	return api.statusView(httpapi.WithScope(ctx, access.Everything()), hubclient.StatusFilter{})
}

// statusView is FleetStatus for the assignments f selects within ctx's scope; an unknown
// release or cluster, or one outside the scope, is an errUnknown. A scope short of the
// whole fleet sees the sources its releases use, the problems of its releases, and not the
// text of a rejected fleet configuration (it may name any project's objects).
func (api *API) statusView(ctx context.Context, f hubclient.StatusFilter) (hubclient.StatusView, error) {
	scope := httpapi.ScopeOf(ctx)
	fd, err := api.loadFleet(ctx, f)
	if err != nil {
		return hubclient.StatusView{}, err
	}
	out := hubclient.StatusView{Sources: []hubclient.SourceView{}, Problems: []string{}, Assignments: fd.assignments}
	if fs, err := api.d.Store.GetFleetStatus(ctx); err == nil {
		out.Fleet = hubclient.FleetStatus{Revision: fs.Revision, Error: fs.Error, UpdatedAt: fs.UpdatedAt}
	}
	srcs, _ := api.d.Store.ListSourceStatuses(ctx)
	view := api.d.View()
	visibleSource := api.sourceFilter(ctx, view)
	for _, s := range srcs {
		if !visibleSource(s.Name) {
			continue
		}
		out.Sources = append(out.Sources, hubclient.SourceView{Name: s.Name, URL: s.URL, Revision: s.Revision, Digest: s.Digest, Error: s.Error, CheckedAt: s.CheckedAt})
	}
	if out.Fleet.Error != "" && !scope.All() {
		out.Fleet.Error = "the fleet configuration's last change was rejected (an admin sees why)"
	} else if out.Fleet.Error != "" {
		out.Fleet.RejectedCommit = view.RejectedCommit
		out.Fleet.RolloutNotice = rolloutNotice(view.FleetURL, view.RejectedCommit, out.Fleet.Revision, out.Sources)
	}
	for _, p := range view.Problems {
		if !problemVisible(scope, p, fd.clusters) {
			continue
		}
		if (f.Release == "" || p.Release == f.Release) && (f.Cluster == "" || p.Cluster == "" || p.Cluster == f.Cluster) {
			out.Problems = append(out.Problems, problemText(p.Release, p.Cluster, p.Message))
		}
	}
	out.Releases = fleetview.Summarize(out.Assignments)
	return out, nil
}

// problemVisible reports whether scope shows p: a problem of a release in the scope (on a
// cluster of the scope, if it names one), or of a project in the scope that concerns no
// release (its tenant fleet repository was rejected). clusters are the scope's clusters.
func problemVisible(scope access.Scope, p schedule.Problem, clusters map[string]bool) bool {
	switch {
	case scope.All():
		return true
	case p.Release != "":
		return scope.Release(p.Release) && (p.Cluster == "" || clusters[p.Cluster])
	case p.Project != "":
		return scope.Project(p.Project)
	}
	return false
}

// fleetData is what the views are computed from: the assignments f selects, as status
// shows them, and the stored statuses behind them.
type fleetData struct {
	assignments []hubclient.AssignmentView
	statuses    []store.AssignmentStatus // of the selected assignments only
	clusters    map[string]bool          // the clusters of the scope (all of them, if f names none)
}

func (api *API) loadFleet(ctx context.Context, f hubclient.StatusFilter) (fleetData, error) {
	if f.Release != "" {
		if known := api.releaseNames(ctx); !slices.Contains(known, f.Release) {
			have := "it has none"
			if len(known) > 0 {
				have = "releases: " + strings.Join(known, ", ")
			}
			return fleetData{}, errUnknown{fmt.Sprintf("release %q is not in the fleet configuration in force (%s)", f.Release, have)}
		}
	}
	var clusters []store.Cluster
	if f.Cluster != "" {
		c, err := api.d.Store.GetCluster(ctx, f.Cluster)
		if err == nil && !httpapi.VisibleCluster(ctx, c) {
			err = store.ErrNotFound
		}
		if errors.Is(err, store.ErrNotFound) {
			return fleetData{}, errUnknown{fmt.Sprintf("cluster %q not found", f.Cluster)}
		}
		if err != nil {
			return fleetData{}, err
		}
		clusters = []store.Cluster{c}
	} else {
		var err error
		if clusters, err = api.d.Store.ListClusters(ctx); err != nil {
			return fleetData{}, err
		}
	}
	statuses, err := api.d.Store.ListStatuses(ctx)
	if err != nil {
		return fleetData{}, err
	}
	reported := make(map[[2]string]*store.AssignmentStatus, len(statuses))
	for i := range statuses {
		s := &statuses[i]
		reported[[2]string{s.Cluster, s.Release}] = s
	}
	out := fleetData{assignments: []hubclient.AssignmentView{}, statuses: []store.AssignmentStatus{}, clusters: map[string]bool{}}
	scope := httpapi.ScopeOf(ctx)
	docs, err := api.desiredDocuments(ctx, f.Cluster)
	if err != nil {
		return fleetData{}, err
	}
	if f.Cluster == "" {
		names := make(map[string]bool, len(clusters))
		for _, c := range clusters {
			names[c.Name] = true
		}
		api.d.Desired.KeepOnly(names)
	}
	for _, c := range clusters {
		if !scope.Cluster(c.Labels) {
			continue
		}
		out.clusters[c.Name] = true
		c.LastSeen, c.AgentVersion = api.d.Seen.Get(c)
		ds, ok := docs[c.Name]
		if !ok {
			continue // not scheduled yet
		}
		as, err := api.d.Desired.Decode(c.Name, ds.Document)
		if err != nil {
			api.d.Logger.Warn("desired state unreadable", "cluster", c.Name, "error", err)
			continue
		}
		obs := fleetview.Observed{LastSeen: c.LastSeen, Reachable: api.reachable(c.LastSeen)}
		for _, a := range as {
			if f.Release != "" && a.Release != f.Release || !scope.Release(a.Release) {
				continue
			}
			s := reported[[2]string{c.Name, a.Release}]
			out.assignments = append(out.assignments, fleetview.Assignment(c.Name, fleetview.Desired{Release: a.Release, Revision: a.Revision, Digest: a.Digest, Rollout: a.Rollout}, s, obs))
			if s != nil {
				out.statuses = append(out.statuses, *s)
			}
		}
	}
	sort.Slice(out.assignments, func(i, j int) bool {
		a, b := out.assignments[i], out.assignments[j]
		if a.Release != b.Release {
			return a.Release < b.Release
		}
		return a.Cluster < b.Cluster
	})
	return out, nil
}

// desiredDocuments returns the stored desired state of cluster, or of every cluster when
// cluster is "", by cluster name: one query for the whole fleet (with PostgreSQL, one per
// cluster would be a round trip each).
func (api *API) desiredDocuments(ctx context.Context, cluster string) (map[string]store.DesiredState, error) {
	if cluster != "" {
		ds, err := api.d.Store.GetDesiredState(ctx, cluster)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return map[string]store.DesiredState{cluster: ds}, nil
	}
	all, err := api.d.Store.ListDesiredStates(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]store.DesiredState, len(all))
	for _, ds := range all {
		out[ds.Cluster] = ds
	}
	return out, nil
}

// releaseNames are the releases of the fleet configuration in force in ctx's scope, sorted.
func (api *API) releaseNames(ctx context.Context) []string {
	var names []string
	scope := httpapi.ScopeOf(ctx)
	if fleet := api.d.View().Fleet; fleet != nil {
		for _, r := range fleet.Releases {
			if scope.Release(r.Metadata.Name) {
				names = append(names, r.Metadata.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// sourceFilter says which sources ctx's scope sees: every one for the whole fleet, else
// those its releases use.
func (api *API) sourceFilter(ctx context.Context, view controller.View) func(name string) bool {
	scope := httpapi.ScopeOf(ctx)
	if scope.All() {
		return func(string) bool { return true }
	}
	used := map[string]bool{}
	if view.Fleet != nil {
		for _, r := range view.Fleet.Releases {
			if scope.Release(r.Metadata.Name) {
				used[r.Spec.Source] = true
			}
		}
	}
	return func(name string) bool { return used[name] }
}

// skewView groups, per release, the clusters by the revision they applied.
func (api *API) skewView(ctx context.Context, release string) (hubclient.SkewView, error) {
	fd, err := api.loadFleet(ctx, hubclient.StatusFilter{Release: release})
	if err != nil {
		return hubclient.SkewView{}, err
	}
	return hubclient.SkewView{Releases: fleetview.Skew(fd.assignments)}, nil
}

// driftView lists the drifted objects of the assignments f selects, from each one's last
// report. A report whose detail cannot be read is logged and left out.
func (api *API) driftView(ctx context.Context, f hubclient.DriftFilter) (hubclient.DriftView, error) {
	fd, err := api.loadFleet(ctx, hubclient.StatusFilter{Release: f.Release, Cluster: f.Cluster})
	if err != nil {
		return hubclient.DriftView{}, err
	}
	objs, err := fleetview.Drift(fd.statuses)
	if err != nil {
		api.d.Logger.Warn("drift view: a report's detail is unreadable", "error", err)
	}
	return hubclient.DriftView{Objects: objs}, nil
}

// rolloutNotice is the one sentence that tells a user the rejected fleet commit is rolling
// out anyway: the fleet repository (fleetURL) is also the repository of a source, which
// resolved to that commit, so clusters get its manifests with the release settings of the
// configuration in force (at inForce). It is "" when no source is at the rejected commit.
func rolloutNotice(fleetURL, rejected, inForce string, sources []hubclient.SourceView) string {
	if fleetURL == "" || rejected == "" {
		return ""
	}
	var names []string
	for _, s := range sources {
		if source.SameRepository(s.URL, fleetURL) && strings.Contains(s.Revision, rejected) {
			names = append(names, "'"+s.Name+"'")
		}
	}
	if len(names) == 0 {
		return ""
	}
	what := "source " + names[0]
	if len(names) > 1 {
		what = "sources " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("Commit %s rolls out through %s (same repository as the fleet) although its fleet configuration was rejected: clusters get its manifests with the release settings of %s.",
		shortHash(rejected), what, shortHash(inForce))
}

// shortHash abbreviates a commit hash as git does; other revisions are left as they are.
func shortHash(rev string) string {
	if len(rev) == 40 && strings.Trim(rev, "0123456789abcdef") == "" {
		return rev[:7]
	}
	return rev
}

// problemText reads "release web on cluster eu-1: message", leaving out the release or the
// cluster a problem does not concern (a tenant fleet repository's has neither).
func problemText(release, cluster, msg string) string {
	switch {
	case release != "" && cluster != "":
		return fmt.Sprintf("release %s on cluster %s: %s", release, cluster, msg)
	case release != "":
		return fmt.Sprintf("release %s: %s", release, msg)
	case cluster != "":
		return fmt.Sprintf("cluster %s: %s", cluster, msg)
	}
	return msg
}
