package access

import (
	"slices"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Scope is what one principal sees of one fleet configuration (see the package comment). The
// zero Scope sees nothing.
type Scope struct {
	all       bool
	projects  map[string]bool
	releases  map[string]bool
	selectors []v1alpha1.LabelSelector // of the projects it sees; one empty selector: every cluster
}

// Everything is the scope of a principal that sees the whole fleet, and of the hub itself.
func Everything() Scope { return Scope{all: true} }

// NewScope returns what p sees of fleet (nil: no configuration loaded yet, so no release).
func NewScope(p Principal, fleet *v1alpha1.Fleet) Scope {
	if p.CanEverywhere(Viewer) {
		return Everything()
	}
	s := Scope{releases: map[string]bool{}, projects: map[string]bool{}}
	var projects []v1alpha1.Project
	if fleet != nil {
		projects = fleet.Projects
		for _, r := range fleet.Releases {
			if p.Can(Viewer, r.Spec.Project) {
				s.releases[r.Metadata.Name] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, g := range p.Grants {
		for _, name := range g.Projects {
			name = v1alpha1.ProjectOrPlatform(name)
			if seen[name] {
				continue
			}
			seen[name] = true
			s.projects[name] = true
			i := slices.IndexFunc(projects, func(pr v1alpha1.Project) bool { return pr.Metadata.Name == name })
			switch {
			case i >= 0:
				s.selectors = append(s.selectors, projects[i].Spec.ClusterSelector)
			case name == v1alpha1.ProjectPlatform: // the built-in platform project: every cluster
				s.selectors = append(s.selectors, v1alpha1.LabelSelector{})
			}
		}
	}
	return s
}

// All reports whether s is the whole fleet.
func (s Scope) All() bool { return s.all }

// Project reports whether s holds the named project ("" is platform): a problem of the
// project's own (its tenant fleet repository rejected) is shown to those who see it.
func (s Scope) Project(name string) bool {
	return s.all || s.projects[v1alpha1.ProjectOrPlatform(name)]
}

// Release reports whether s holds the named release.
func (s Scope) Release(name string) bool { return s.all || s.releases[name] }

// Cluster reports whether s holds a cluster with these labels.
func (s Scope) Cluster(labels map[string]string) bool {
	if s.all {
		return true
	}
	for _, sel := range s.selectors {
		if sel.Matches(labels) {
			return true
		}
	}
	return false
}
