// Package plan computes what a candidate fleet configuration would change on which clusters,
// before it is merged (`flotilla plan`, POST /api/v1/plan).
//
// [Compute] runs the hub's own scheduler ([schedule.Schedule]) on the candidate against the
// documents in force, compares each cluster's assignments release by release (gained, lost,
// changed settings), renders what runs now and what the candidate would run with the agent's
// renderer ([render.Render], which reads only the artifact) and diffs the objects. Clusters
// that get exactly the same change are grouped by a hash of it, so that a thousand clusters
// collapse to a few diffs. A changed assignment that a window, freeze or suspension holds
// back now is marked as waiting.
//
// It applies nothing and stores nothing: its inputs are read by the caller, and artifacts are
// reached through [Input.Dir]. Everything is bounded ([Limits]): renders, time, the diff of
// one object, the groups and clusters listed; what a limit leaves out is named in
// Plan.Truncated.
package plan

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/window"
	"github.com/flotilla/flotilla/internal/window/hold"
)

// Limits bound one plan.
type Limits struct {
	// Renders is how many distinct (artifact, path, variables) renders a plan may make.
	Renders int
	// RenderTime bounds the time spent rendering, in all.
	RenderTime time.Duration
	// DiffBytes bounds one object's diff; DiffTotal all diffs of the plan.
	DiffBytes, DiffTotal int
	// Groups bounds the groups listed; ClustersListed the clusters named per group;
	// Problems the problems listed.
	Groups, ClustersListed, Problems int
}

// DefaultLimits are the hub's limits.
func DefaultLimits() Limits {
	return Limits{Renders: 2000, RenderTime: 15 * time.Second, DiffBytes: 16 << 10, DiffTotal: 1 << 20,
		Groups: 200, ClustersListed: 50, Problems: 200}
}

// Input is what a plan reads; Compute does no other I/O than Dir and rendering.
type Input struct {
	// Candidate is the candidate fleet configuration (validated).
	Candidate *v1alpha1.Fleet
	// CandidateRevision names the candidate in tombstones.
	CandidateRevision string
	// Clusters are the registered clusters.
	Clusters []schedule.Cluster
	// Current are the clusters' documents in force, by cluster.
	Current map[string]desired.Document
	// CurrentProblems are the scheduling problems of the configuration in force: the same
	// problem in the candidate is not the candidate's doing.
	CurrentProblems []schedule.Problem
	// Artifacts are the candidate's sources' artifacts, by source name.
	Artifacts map[string]schedule.Artifact
	// Dir returns the unpacked directory of an artifact.
	Dir func(ctx context.Context, digest string) (string, error)
	// InForce is the fleet configuration the hub runs. A release's project, for Visible, is
	// the one it has there (or in Current), never the candidate's: a candidate that labels
	// another team's release as the caller's does not show it. Only a release new in the
	// candidate is taken at the candidate's word (CheckCandidate refuses one of another
	// project).
	InForce *v1alpha1.Fleet
	// Visible reports whether the caller may see a release of a project; nil: everything.
	Visible func(release, project string) bool
	// SeesCluster reports whether the caller may see a cluster; nil: every cluster. A
	// cluster it may not see is left out of the plan: its name, its labels (in variables
	// and rendered objects) and its problems.
	SeesCluster func(c schedule.Cluster) bool
	// Now is when windows are evaluated.
	Now    time.Time
	Limits Limits
	// Schedule are the platform's settings the hub schedules with (the render budget), so
	// that the plan renders each release under the budget the agent would.
	Schedule schedule.Options
}

// change is one release's change on one cluster, before grouping.
type change struct {
	release, cluster string
	group            hubclient.PlanGroup
}

// Compute returns the plan. It fails only when ctx ends; everything else is in the plan.
func Compute(ctx context.Context, in Input) (hubclient.Plan, error) {
	lim := in.Limits
	if lim == (Limits{}) {
		lim = DefaultLimits()
	}
	visible := in.Visible
	if visible == nil {
		visible = func(string, string) bool { return true }
	}
	projectOf := releaseProjects(in.InForce, in.Candidate, in.Current)
	see := func(release string) bool { return release == "" || visible(release, projectOf[release]) }
	seesCluster := func(name string) bool { return true }
	if in.SeesCluster != nil {
		labels := make(map[string]schedule.Cluster, len(in.Clusters))
		for _, c := range in.Clusters {
			labels[c.Name] = c
		}
		seesCluster = func(name string) bool {
			c, ok := labels[name]
			return name == "" || (ok && in.SeesCluster(c))
		}
	}

	clusters := slices.Clone(in.Clusters)
	slices.SortFunc(clusters, func(a, b schedule.Cluster) int { return strings.Compare(a.Name, b.Name) })
	sched := schedule.ScheduleWith(in.Schedule, in.Candidate, clusters, in.Artifacts, in.Current, in.CandidateRevision)

	out := hubclient.Plan{Groups: []hubclient.PlanGroup{}, Problems: []hubclient.PlanProblem{}}
	old := map[string]bool{}
	for _, p := range in.CurrentProblems {
		old[p.String()] = true
	}
	for _, p := range sched.Problems {
		if !see(p.Release) || !seesCluster(p.Cluster) || (p.Project != "" && !visible("", p.Project)) {
			continue
		}
		pp := hubclient.PlanProblem{Kind: hubclient.PlanSchedule, Release: p.Release, Cluster: p.Cluster, Message: p.Message, Existing: old[p.String()]}
		out.Problems = append(out.Problems, pp)
	}

	r := newRenderer(ctx, in.Dir, lim)
	defer r.close()
	var changes []change
	verdicts := verdictCache{}
	for _, c := range clusters {
		if !seesCluster(c.Name) {
			continue
		}
		cur := byRelease(in.Current[c.Name].Assignments)
		next := byRelease(sched.Assignments[c.Name])
		gates := candidateGates(in.Candidate, c, in.Current[c.Name].Gates)
		names := slices.Sorted(maps.Keys(union(cur, next)))
		seen := false
		for _, rel := range names {
			if !see(rel) {
				continue
			}
			if !seen {
				out.Summary.Clusters++
				seen = true
			}
			a, hadA := cur[rel]
			b, hasB := next[rel]
			g, ok := r.compare(rel, a, hadA, b, hasB)
			if !ok {
				continue
			}
			if hasB && g.Change != hubclient.PlanLost {
				if v := verdicts.evaluate(gates, rel, in.Now); v.Revisions {
					g.Waiting = v.Reason
				}
			}
			changes = append(changes, change{release: rel, cluster: c.Name, group: g})
		}
		if !seen && in.Visible == nil {
			out.Summary.Clusters++ // a cluster that runs nothing: shown to whoever sees all
		}
	}
	if err := ctx.Err(); err != nil {
		return hubclient.Plan{}, err
	}
	group(&out, changes, lim)
	out.Truncated = append(out.Truncated, r.truncated()...)
	for _, p := range out.Problems {
		if !p.Existing {
			out.Errors = true
		}
	}
	out.Problems = mergeProblems(out.Problems, lim.ClustersListed)
	if len(out.Problems) > lim.Problems {
		out.Truncated = append(out.Truncated, fmt.Sprintf("%d more problems", len(out.Problems)-lim.Problems))
		out.Problems = out.Problems[:lim.Problems]
	}
	out.Changes = len(changes) > 0
	return out, nil
}

// group collapses the changes into groups by release and hash, and counts them.
func group(out *hubclient.Plan, changes []change, lim Limits) {
	idx := map[string]int{}
	changed, releases := map[string]bool{}, map[string]bool{}
	var groups []hubclient.PlanGroup
	for _, ch := range changes {
		changed[ch.cluster], releases[ch.release] = true, true
		switch ch.group.Change {
		case hubclient.PlanGained:
			out.Summary.Gained++
		case hubclient.PlanLost:
			out.Summary.Lost++
		default:
			out.Summary.Changed++
		}
		if ch.group.Waiting != "" {
			out.Summary.Waiting++
		}
		if ch.group.Error != "" {
			out.Errors = true
		}
		g := ch.group
		g.Hash = groupHash(g.Hash, g.Waiting)
		key := ch.release + "\x00" + g.Hash
		i, ok := idx[key]
		if !ok {
			i = len(groups)
			idx[key] = i
			groups = append(groups, g)
		}
		groups[i].ClusterCount++
		if len(groups[i].Clusters) < lim.ClustersListed {
			groups[i].Clusters = append(groups[i].Clusters, ch.cluster)
		}
	}
	for _, g := range groups {
		if g.Error != "" {
			out.Problems = append(out.Problems, hubclient.PlanProblem{Kind: hubclient.PlanRender, Release: g.Release,
				Cluster: clusterList(g), Message: g.Error})
		}
	}
	slices.SortStableFunc(groups, func(a, b hubclient.PlanGroup) int {
		return cmp.Or(strings.Compare(a.Release, b.Release), strings.Compare(a.Clusters[0], b.Clusters[0]))
	})
	out.Summary.ClustersChanged, out.Summary.Releases = len(changed), len(releases)
	if len(groups) > lim.Groups {
		out.Truncated = append(out.Truncated, fmt.Sprintf("%d more groups of changes", len(groups)-lim.Groups))
		groups = groups[:lim.Groups]
	}
	total, left := 0, 0
	for i := range groups {
		for j := range groups[i].Objects {
			d := &groups[i].Objects[j].Diff
			if total+len(*d) > lim.DiffTotal {
				*d, left = "", left+1
				continue
			}
			total += len(*d)
		}
	}
	if left > 0 {
		out.Truncated = append(out.Truncated, fmt.Sprintf("the diffs of %d objects (over %d bytes of diffs in all)", left, lim.DiffTotal))
	}
	out.Groups = append(out.Groups, groups...)
	slices.SortStableFunc(out.Problems, func(a, b hubclient.PlanProblem) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Release, b.Release), strings.Compare(a.Cluster, b.Cluster))
	})
}

// mergeProblems lists a problem that many clusters share once, naming its clusters ("c1,
// c2 and 998 more"), in the order of its first cluster.
func mergeProblems(ps []hubclient.PlanProblem, listed int) []hubclient.PlanProblem {
	type merged struct {
		p        hubclient.PlanProblem
		clusters []string
		n        int
	}
	idx := map[hubclient.PlanProblem]int{}
	var ms []merged
	for _, p := range ps {
		key := p
		key.Cluster = ""
		if p.Cluster == "" {
			key.Cluster = "\x00" // a problem of every cluster is not merged with one of some
		}
		i, ok := idx[key]
		if !ok {
			i = len(ms)
			idx[key] = i
			ms = append(ms, merged{p: p})
		}
		if p.Cluster != "" {
			ms[i].n++
			if len(ms[i].clusters) < listed {
				ms[i].clusters = append(ms[i].clusters, p.Cluster)
			}
		}
	}
	out := make([]hubclient.PlanProblem, len(ms))
	for i, m := range ms {
		out[i] = m.p
		if m.n > 1 {
			out[i].Cluster = clusterList(hubclient.PlanGroup{Clusters: m.clusters, ClusterCount: m.n})
		}
	}
	return out
}

// clusterList names a group's clusters for a problem: "c1, c2 and 3 more".
func clusterList(g hubclient.PlanGroup) string {
	s := strings.Join(g.Clusters, ", ")
	if more := g.ClusterCount - len(g.Clusters); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// groupHash identifies a change by its content (contentHash) and what holds it back: the
// clusters that share it are one group.
func groupHash(content, waiting string) string {
	h := sha256.Sum256([]byte(content + "\x00" + waiting))
	return hex.EncodeToString(h[:])[:12]
}

func byRelease(as []desired.Assignment) map[string]desired.Assignment {
	m := make(map[string]desired.Assignment, len(as))
	for _, a := range as {
		m[a.Release] = a
	}
	return m
}

// union is the set of the keys of a and b.
func union[V any](a, b map[string]V) map[string]bool {
	m := make(map[string]bool, len(a)+len(b))
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// releaseProjects maps each release to its project in force: the fleet in force's, else the
// one its assignments in force carry, else (a release new in the candidate) the candidate's.
func releaseProjects(inForce, f *v1alpha1.Fleet, current map[string]desired.Document) map[string]string {
	m := map[string]string{}
	if f != nil {
		for _, r := range f.Releases {
			m[r.Metadata.Name] = r.Spec.ProjectOrDefault()
		}
	}
	for _, doc := range current {
		for _, a := range doc.Assignments {
			p := ""
			if a.Project != nil {
				p = a.Project.Name
			}
			m[a.Release] = v1alpha1.ProjectOrPlatform(p)
		}
	}
	if inForce != nil {
		for _, r := range inForce.Releases {
			m[r.Metadata.Name] = r.Spec.ProjectOrDefault()
		}
	}
	return m
}

// verdictCache evaluates each set of gates once per release: the clusters of a fleet share
// a few sets of gates, and evaluating a window's schedule is not free.
type verdictCache map[string]window.Verdict

func (vc verdictCache) evaluate(gates []window.Gate, release string, now time.Time) window.Verdict {
	if len(gates) == 0 {
		return window.Verdict{}
	}
	data, err := json.Marshal(gates)
	if err != nil {
		return window.Evaluate(gates, release, now)
	}
	key := release + "\x00" + string(data)
	if v, ok := vc[key]; ok {
		return v
	}
	v := window.Evaluate(gates, release, now)
	vc[key] = v
	return v
}

// candidateGates are the gates a cluster would have under the candidate: its windows and
// suspended releases, and the freezes and suspension of the cluster in force (those are not
// in the configuration).
func candidateGates(f *v1alpha1.Fleet, c schedule.Cluster, current []window.Gate) []window.Gate {
	var gates []window.Gate
	for _, g := range current {
		if hold.IsFreeze(g) || hold.IsClusterSuspension(g) {
			gates = append(gates, g)
		}
	}
	if f == nil {
		return gates
	}
	for _, w := range f.Windows {
		if w.Spec.ClusterSelector.Matches(c.Labels) {
			gates = append(gates, window.Gate{Name: w.Metadata.Name, Kind: window.KindWindow, Type: w.Spec.Type,
				Schedule: w.Spec.Schedule, Duration: w.Spec.Duration.Duration, TimeZone: w.Spec.TimeZone,
				Releases: slices.Clone(w.Spec.Releases), Blocks: slices.Clone(w.Spec.Blocks)})
		}
	}
	for _, r := range f.Releases {
		if r.Spec.Suspend {
			gates = append(gates, window.Gate{Name: r.Metadata.Name, Kind: window.KindSuspend, Type: v1alpha1.WindowDeny, Releases: []string{r.Metadata.Name}})
		}
	}
	return gates
}
