package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Refusal is a candidate that a caller scoped to some projects may not plan: it changes
// something of the fleet in force outside them. The message names the object and why.
type Refusal struct{ msg string }

func (e *Refusal) Error() string { return "plan refused: " + e.msg }

// Caller is who a plan is for, as the scope checks read it: the projects it may view, or
// every project.
type Caller struct {
	// All: the caller views every project; nothing is checked or hidden.
	All bool
	// Projects the caller views ("platform" for the built-in project).
	Projects []string
}

func (c Caller) mine(project string) bool {
	return c.All || slices.Contains(c.Projects, v1alpha1.ProjectOrPlatform(project))
}

func (c Caller) list() string { return "[" + strings.Join(c.Projects, ", ") + "]" }

// CheckCandidate returns a *Refusal when cand changes, against the fleet in force, anything
// outside the caller's projects. What a plan shows follows the fleet in force, so a
// candidate that relabels the platform's releases as the caller's, or widens the caller's
// Project, would otherwise not change what it sees only because it is refused here: both
// are refused, so that a scoped plan is always a plan of the caller's own change. The
// candidate is compared object by object:
//   - Projects, Windows and Notifications belong to the whole fleet: any change is refused;
//   - a Release may be added, removed or changed only within the caller's projects, and
//     may not move into or out of them;
//   - a Source may change only when no release outside the caller's projects uses it (in
//     force or in the candidate), and then only in which revision it follows: a new
//     repository, URL or credentials would make the hub read, with the platform's
//     credentials, what the caller's project was never given.
func CheckCandidate(inForce, cand *v1alpha1.Fleet, c Caller) error {
	if c.All {
		return nil
	}
	if inForce == nil {
		inForce = &v1alpha1.Fleet{}
	}
	for _, k := range []struct {
		kind      string
		old, next map[string]any
	}{
		{v1alpha1.KindProject, byName(inForce.Projects, func(p v1alpha1.Project) string { return p.Metadata.Name }),
			byName(cand.Projects, func(p v1alpha1.Project) string { return p.Metadata.Name })},
		{v1alpha1.KindWindow, byName(inForce.Windows, func(w v1alpha1.Window) string { return w.Metadata.Name }),
			byName(cand.Windows, func(w v1alpha1.Window) string { return w.Metadata.Name })},
		{v1alpha1.KindNotification, byName(inForce.Notifications, func(n v1alpha1.Notification) string { return n.Metadata.Name }),
			byName(cand.Notifications, func(n v1alpha1.Notification) string { return n.Metadata.Name })},
	} {
		if name, how := firstChange(k.old, k.next); name != "" {
			return &Refusal{fmt.Sprintf("%s %s %s: only a caller of every project may plan changes to %ss; your projects are %s",
				k.kind, name, how, k.kind, c.list())}
		}
	}

	oldRel := map[string]v1alpha1.Release{}
	for _, r := range inForce.Releases {
		oldRel[r.Metadata.Name] = normalRelease(r)
	}
	newRel := map[string]v1alpha1.Release{}
	for _, r := range cand.Releases {
		newRel[r.Metadata.Name] = normalRelease(r)
	}
	for _, name := range slices.Sorted(maps.Keys(union(oldRel, newRel))) {
		a, had := oldRel[name]
		b, has := newRel[name]
		switch {
		case had && has && a.Spec.Project != b.Spec.Project && (!c.mine(a.Spec.Project) || !c.mine(b.Spec.Project)):
			return &Refusal{fmt.Sprintf("release %s would move from project %s to %s: a release may not move into or out of your projects %s",
				name, a.Spec.Project, b.Spec.Project, c.list())}
		case had && !c.mine(a.Spec.Project) && !(has && equalJSON(a, b)):
			how := "changes"
			if !has {
				how = "removes"
			}
			return &Refusal{fmt.Sprintf("release %s is in project %s, outside your projects %s: the candidate %s it",
				name, a.Spec.Project, c.list(), how)}
		case !had && has && !c.mine(b.Spec.Project):
			return &Refusal{fmt.Sprintf("release %s is added in project %s, outside your projects %s", name, b.Spec.Project, c.list())}
		}
	}

	users := sourceUsers(inForce, cand)
	oldSrc := byName(inForce.Sources, func(s v1alpha1.Source) string { return s.Metadata.Name })
	newSrc := byName(cand.Sources, func(s v1alpha1.Source) string { return s.Metadata.Name })
	for _, name := range slices.Sorted(maps.Keys(union(oldSrc, newSrc))) {
		a, had := oldSrc[name]
		b, has := newSrc[name]
		if had && has && equalJSON(a, b) {
			continue
		}
		for _, u := range users[name] {
			if !c.mine(u.project) {
				return &Refusal{fmt.Sprintf("Source %s changed: release %s of project %s uses it, outside your projects %s",
					name, u.release, u.project, c.list())}
			}
		}
		if !has {
			continue // removed, and no release of another project reads it
		}
		if !had || !sameRepository(a.(v1alpha1.Source), b.(v1alpha1.Source)) {
			how := "is new"
			if had {
				how = "changes its repository, URL or credentials"
			}
			return &Refusal{fmt.Sprintf("Source %s %s: a caller scoped to projects %s may change only which revision a source follows (branch, tag, semver, commit, version, digest, interval); a new repository takes a caller of every project",
				name, how, c.list())}
		}
	}
	return nil
}

// SourceAllowed reports whether one of the caller's projects, as the fleet defines them,
// may use the named source (spec.sources; the built-in platform project may use every
// source): `--source NAME=REF` reads another ref of it.
func SourceAllowed(f *v1alpha1.Fleet, c Caller, name string) bool {
	if c.All {
		return true
	}
	url := ""
	for _, s := range f.Sources {
		if s.Metadata.Name == name {
			url = v1alpha1.SourceURL(s.Spec)
			break
		}
	}
	for _, p := range c.Projects {
		i := slices.IndexFunc(f.Projects, func(pr v1alpha1.Project) bool { return pr.Metadata.Name == p })
		switch {
		case i >= 0 && f.Projects[i].Spec.AllowsSource(name, url):
			return true
		case i < 0 && p == v1alpha1.ProjectPlatform:
			return true
		}
	}
	return false
}

type sourceUser struct{ release, project string }

// sourceUsers: by source name, the releases (in force and in the candidate) that read it,
// as their source or for a values or patch file.
func sourceUsers(fleets ...*v1alpha1.Fleet) map[string][]sourceUser {
	m := map[string][]sourceUser{}
	for _, f := range fleets {
		for _, r := range f.Releases {
			u := sourceUser{r.Metadata.Name, r.Spec.ProjectOrDefault()}
			for _, s := range ReleaseSources(r.Spec) {
				if !slices.Contains(m[s], u) {
					m[s] = append(m[s], u)
				}
			}
		}
	}
	for _, us := range m {
		slices.SortFunc(us, func(a, b sourceUser) int { return strings.Compare(a.release, b.release) })
	}
	return m
}

// ReleaseSources are the sources a release reads: its own, and those its Helm values files
// and post-render patch files name.
func ReleaseSources(s v1alpha1.ReleaseSpec) []string {
	out := []string{s.Source}
	for _, ref := range s.FileSourceRefs() {
		out = append(out, ref.Source)
	}
	return out
}

// sameRepository: a and b read the same repository with the same credentials; they may
// follow another revision.
func sameRepository(a, b v1alpha1.Source) bool {
	strip := func(s v1alpha1.Source) v1alpha1.Source {
		s.Spec.Interval = v1alpha1.Duration{}
		if g := s.Spec.Git; g != nil {
			c := *g
			c.Branch, c.Tag, c.Semver, c.Commit = "", "", "", ""
			s.Spec.Git = &c
		}
		if h := s.Spec.Helm; h != nil {
			c := *h
			c.Version = ""
			s.Spec.Helm = &c
		}
		if o := s.Spec.OCI; o != nil {
			c := *o
			c.Tag, c.Semver, c.Digest = "", "", ""
			s.Spec.OCI = &c
		}
		return s
	}
	return equalJSON(strip(a), strip(b))
}

// normalRelease is r with its project spelled out: "" and "platform" are the same.
func normalRelease(r v1alpha1.Release) v1alpha1.Release {
	r.Spec.Project = r.Spec.ProjectOrDefault()
	return r
}

func byName[T any](items []T, name func(T) string) map[string]any {
	m := make(map[string]any, len(items))
	for _, it := range items {
		if _, dup := m[name(it)]; !dup {
			m[name(it)] = it
		}
	}
	return m
}

// firstChange returns the first name (sorted) added, removed or changed from old to next,
// and how.
func firstChange(old, next map[string]any) (string, string) {
	for _, name := range slices.Sorted(maps.Keys(union(old, next))) {
		a, had := old[name]
		b, has := next[name]
		switch {
		case !had:
			return name, "added"
		case !has:
			return name, "removed"
		case !equalJSON(a, b):
			return name, "changed"
		}
	}
	return "", ""
}

func equalJSON(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}
