package schedule

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/window"
)

// Cluster is a registered cluster as the scheduler sees it.
type Cluster struct {
	Name   string
	Labels map[string]string
}

// Artifact is one resolved source: the revision the hub resolved and the artifact it built.
type Artifact struct {
	Source   string
	URL      string
	Revision string
	Digest   string // sha256:<hex>
}

// Options are the platform's settings a schedule applies to every release.
type Options struct {
	// RenderBudget is the hub's default render budget (hub flags): a project's maximum is
	// at most it. A zero field sets no bound of the hub's on that field.
	RenderBudget v1alpha1.BudgetLimits
	// AgentDefaults is the budget an agent renders an assignment under when it names none
	// (render.DefaultBudget): an assignment whose budget is exactly that carries none.
	AgentDefaults v1alpha1.BudgetLimits
}

// Problem is a release that could not be scheduled as written, for one cluster or (Cluster
// empty) for every cluster.
type Problem struct {
	Release string
	Cluster string
	Message string
	// Project is the project a problem of no release concerns (a tenant fleet repository
	// that was rejected), so that a view can show it to that project's users; "" otherwise
	// (a release's project is its spec.project).
	Project string `json:",omitempty"`
}

// String reads "Release/baseline on cluster eu-1: message".
func (p Problem) String() string {
	var b strings.Builder
	if p.Release != "" {
		b.WriteString("Release/" + p.Release)
	}
	if p.Cluster != "" {
		if b.Len() > 0 {
			b.WriteString(" on ")
		}
		b.WriteString("cluster " + p.Cluster)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Plan is the scheduler's output.
type Plan struct {
	// Assignments by cluster name: an entry for every cluster given (empty when nothing
	// matches), each sorted by release.
	Assignments map[string][]desired.Assignment
	// Removed by cluster name: the tombstones of each cluster's next document (see
	// [desired.Document]); nil where there are none.
	Removed map[string][]desired.Tombstone
	// Problems sorted by release, then cluster. An assignment they concern is either left out
	// or, when the cluster had one, kept from previous.
	Problems []Problem
	// Gates and Syncs by cluster name: the windows, freezes and suspensions, and the pending
	// sync requests, of each cluster's next document. Schedule leaves them nil; the
	// controller fills them.
	Gates map[string][]window.Gate
	Syncs map[string][]desired.SyncRequest
}

// Document returns cluster's next desired-state document.
func (p Plan) Document(cluster string) desired.Document {
	return desired.Document{Assignments: p.Assignments[cluster], Removed: p.Removed[cluster], Gates: p.Gates[cluster], Syncs: p.Syncs[cluster]}
}

// Schedule assigns every release of fleet to the clusters it matches.
//
// artifacts holds the resolved artifact of each source, by source name. previous is the last
// plan's documents by cluster name: a release that cannot be scheduled for a cluster (no
// artifact for its source, a path that does not resolve) keeps its previous assignment there,
// and a release that leaves a cluster gets a tombstone naming why and fleetRevision.
// fleet is expected to have passed validation; what validation would refuse is reported as a
// Problem rather than trusted. Nothing in the inputs is modified or referenced by the plan.
func Schedule(fleet *v1alpha1.Fleet, clusters []Cluster, artifacts map[string]Artifact, previous map[string]desired.Document, fleetRevision string) Plan {
	return ScheduleWith(Options{}, fleet, clusters, artifacts, previous, fleetRevision)
}

// ScheduleWith is [Schedule] with the platform's settings.
func ScheduleWith(opts Options, fleet *v1alpha1.Fleet, clusters []Cluster, artifacts map[string]Artifact, previous map[string]desired.Document, fleetRevision string) Plan {
	if fleet == nil {
		// Never schedule from "no configuration": that plan would remove everything.
		return keepAll(clusters, previous)
	}
	s := scheduler{opts: opts}
	rels := s.prepare(fleet, artifacts)

	plan := Plan{Assignments: make(map[string][]desired.Assignment, len(clusters)), Removed: map[string][]desired.Tombstone{}}
	for _, c := range clusters {
		if c.Name == "" {
			s.problem("", "", "a cluster without a name was left out")
			continue
		}
		if _, dup := plan.Assignments[c.Name]; dup {
			s.problem("", c.Name, "cluster is listed more than once; the first entry was used")
			continue
		}
		prev := previous[c.Name]
		as := s.scheduleCluster(c, rels, prev.Assignments)
		plan.Assignments[c.Name] = as
		if len(prev.Removed) == 0 && len(prev.Assignments) == 0 {
			continue
		}
		why := func(release string) string {
			if !slices.ContainsFunc(rels, func(r prepared) bool { return r.name == release }) {
				return desired.ReasonReleaseDeleted
			}
			return desired.ReasonNotSelected
		}
		if rm := removals(prev, as, fleetRevision, why); len(rm) > 0 {
			plan.Removed[c.Name] = rm
		}
	}

	for i := range rels {
		if r := &rels[i]; r.targeted > 0 && r.allowed == 0 {
			s.problem(r.name, "", "its targets select %s, and its project's clusterSelector (%s) allows none of them; not assigned",
				clusterCount(r.targeted), selectorText(r.clusters))
		}
	}
	slices.SortFunc(s.problems, func(a, b Problem) int {
		return cmp.Or(
			strings.Compare(a.Release, b.Release),
			strings.Compare(a.Cluster, b.Cluster),
			strings.Compare(a.Message, b.Message),
		)
	})
	plan.Problems = s.problems
	return plan
}

// keepAll is the plan that changes nothing: every cluster keeps its previous document.
func keepAll(clusters []Cluster, previous map[string]desired.Document) Plan {
	plan := Plan{Assignments: make(map[string][]desired.Assignment, len(clusters)), Removed: map[string][]desired.Tombstone{}}
	for _, c := range clusters {
		prev := previous[c.Name]
		plan.Assignments[c.Name] = cloneAssignments(prev.Assignments)
		if len(prev.Removed) > 0 {
			plan.Removed[c.Name] = slices.Clone(prev.Removed)
		}
	}
	plan.Problems = []Problem{{Message: "no fleet configuration: every cluster keeps its desired state"}}
	return plan
}

func cloneAssignments(in []desired.Assignment) []desired.Assignment {
	out := make([]desired.Assignment, len(in))
	for i, a := range in {
		a.Vars = maps.Clone(a.Vars)
		if a.Vars == nil {
			a.Vars = map[string]string{}
		}
		out[i] = a
	}
	return out
}

// scheduler collects problems during one call of Schedule.
type scheduler struct {
	opts     Options
	problems []Problem
	scratch  []desired.Assignment
}

func (s *scheduler) problem(release, cluster, format string, args ...any) {
	s.problems = append(s.problems, Problem{Release: release, Cluster: cluster, Message: fmt.Sprintf(format, args...)})
}

// prepared is a Release prepared once per call, not once per cluster.
type prepared struct {
	name    string
	targets []v1alpha1.Target
	// Either tmpl is set, or path is the literal path (most paths have no action, and executing
	// a template for each of a thousand clusters would be waste), or pathErr says why the
	// template does not parse.
	tmpl     *pathTemplate
	path     string
	pathErr  error
	artifact Artifact
	resolved bool // the source has an artifact
	// unresolved says why resolved is false although the source has an artifact (a file its
	// Helm settings name is in a source without one).
	unresolved string
	vars       map[string]string
	base       desired.Assignment // everything but the path and Vars
	// clusters bounds the clusters the release may target: its project's clusterSelector.
	clusters v1alpha1.LabelSelector
	// refused says which rule of its project the release breaks; "" when none. A refused
	// release is not assigned afresh anywhere (see keep).
	refused string
	// targeted counts the clusters the release's targets select, allowed those its
	// project's clusterSelector allows of them.
	targeted, allowed int
}

// prepare returns the fleet's releases sorted by name, so that assignment lists come out
// sorted without a sort per cluster.
func (s *scheduler) prepare(fleet *v1alpha1.Fleet, artifacts map[string]Artifact) []prepared {
	if fleet == nil {
		return nil
	}
	rels := make([]prepared, 0, len(fleet.Releases))
	seen := make(map[string]bool, len(fleet.Releases))
	projects := newProjects(fleet)
	for i := range fleet.Releases {
		r := &fleet.Releases[i]
		name := r.Metadata.Name
		if seen[name] {
			s.problem(name, "", "release is defined more than once; the first definition was used")
			continue
		}
		seen[name] = true

		a, ok := artifacts[r.Spec.Source]
		var err error
		rel := prepared{
			name:     name,
			targets:  r.Spec.Targets,
			artifact: a,
			resolved: ok,
			vars:     r.Spec.Variables,
			base: desired.Assignment{
				Release:         name,
				Source:          r.Spec.Source,
				URL:             a.URL,
				Revision:        a.Revision,
				Digest:          a.Digest,
				Namespace:       r.Spec.Namespace,
				CreateNamespace: r.Spec.CreateNamespace,
				Prune:           r.Spec.Prune,
				SelfHeal:        r.Spec.SelfHealOrDefault(),
				Wait:            r.Spec.Wait,
				Timeout:         r.Spec.TimeoutOrDefault(),
				Interval:        r.Spec.IntervalOrDefault(),
				Ignore:          r.Spec.Ignore,
				RespectManagers: r.Spec.RespectManagers,
				DependsOn:       r.Spec.DependsOn,
				Adopt:           r.Spec.Adopt,
			},
		}
		if strings.Contains(r.Spec.Path, "{{") {
			var t *template.Template
			if t, rel.pathErr = r.Spec.PathTemplate(); rel.pathErr == nil {
				rel.tmpl = newPathTemplate(t)
			}
		} else {
			rel.path = r.Spec.Path
		}
		if r.Spec.Decryption != nil {
			rel.base.Decryption = r.Spec.Decryption.Provider
		}
		if ok {
			if rel.base.Helm, err = resolveHelm(r, artifacts); err != nil {
				rel.resolved, rel.unresolved = false, err.Error()
			}
		}
		rel.base.Project, rel.clusters, rel.refused = projects.bound(r)
		if rel.refused == "" {
			rel.base.RenderBudget, rel.refused = projects.renderBudget(s.opts, r)
		}
		if rel.refused != "" {
			s.problem(name, "", "%s; not assigned afresh (clusters that had it keep their assignment)", rel.refused)
		}
		if _, ok := r.Spec.Variables[v1alpha1.ClusterNameVariable]; ok {
			s.problem(name, "", "variable %s is set from the cluster and cannot be overridden; the release's value is ignored",
				v1alpha1.ClusterNameVariable)
		}
		rels = append(rels, rel)
	}
	slices.SortStableFunc(rels, func(a, b prepared) int { return strings.Compare(a.name, b.name) })
	return rels
}

// scheduleCluster returns the cluster's assignments. out is scratch space, reused from cluster
// to cluster so that each result is allocated once at its final size.
func (s *scheduler) scheduleCluster(c Cluster, rels []prepared, previous []desired.Assignment) []desired.Assignment {
	out := s.scratch[:0]
	defer func() { s.scratch = out[:0] }()
	var cvars map[string]string // computed on the first match
	for i := range rels {
		r := &rels[i]
		if !matches(r.targets, c.Labels) {
			continue
		}
		r.targeted++
		if !r.clusters.Matches(c.Labels) {
			continue
		}
		r.allowed++
		if r.refused != "" {
			keepQuietly(&out, r, previous) // reported once for every cluster by prepare
			continue
		}
		if !r.resolved {
			why := r.unresolved
			if why == "" {
				why = fmt.Sprintf("source %q has no artifact", r.base.Source)
			}
			s.keep(&out, r, c.Name, previous, why)
			continue
		}
		p, err := r.resolvePath(c)
		if err != nil {
			s.keep(&out, r, c.Name, previous, err.Error())
			continue
		}
		if cvars == nil {
			cvars = v1alpha1.ClusterVariables(c.Name, c.Labels)
		}
		a := r.base
		a.Path = p
		a.Vars = v1alpha1.MergeVariables(cvars, r.vars)
		out = append(out, a)
	}
	return append(make([]desired.Assignment, 0, len(out)), out...)
}

// keep appends the cluster's previous assignment for release r, if it had one, and reports
// why the release could not be scheduled afresh.
func (s *scheduler) keep(out *[]desired.Assignment, r *prepared, cluster string, previous []desired.Assignment, why string) {
	if a, ok := keepQuietly(out, r, previous); ok {
		s.problem(r.name, cluster, "%s; kept the previous assignment (revision %s)", why, a.Revision)
		return
	}
	s.problem(r.name, cluster, "%s; not assigned", why)
}

// keepQuietly appends the cluster's previous assignment for release r, if it had one, with
// the rules of r's project as they are now: the agent checks what it keeps running against
// the project's current bounds, never against ones the fleet has since narrowed. A release
// whose project is not defined keeps the rules it had: nil would mean "everything allowed".
func keepQuietly(out *[]desired.Assignment, r *prepared, previous []desired.Assignment) (desired.Assignment, bool) {
	for _, a := range previous {
		if a.Release == r.name {
			a.Vars = maps.Clone(a.Vars)
			if a.Vars == nil {
				a.Vars = map[string]string{}
			}
			if r.refused == "" || r.base.Project != nil {
				a.Project = r.base.Project
			} // else: its project is not defined, so the rules it had are the only ones known
			*out = append(*out, a)
			return a, true
		}
	}
	return desired.Assignment{}, false
}

// matches reports whether any target selects a cluster with these labels.
func matches(targets []v1alpha1.Target, labels map[string]string) bool {
	for _, t := range targets {
		if t.Selector.Matches(labels) {
			return true
		}
	}
	return false
}
