package schedule

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/project"
)

// projects are a fleet's projects prepared once per call: each one's rules are shared by
// every assignment of its releases (they are never modified).
type projects struct {
	specs   map[string]*v1alpha1.ProjectSpec
	rules   map[string]*project.Rules
	sources map[string]string // URL by source name (v1alpha1.SourceURL)
}

func newProjects(fleet *v1alpha1.Fleet) projects {
	ps := projects{
		specs:   make(map[string]*v1alpha1.ProjectSpec, len(fleet.Projects)),
		rules:   make(map[string]*project.Rules, len(fleet.Projects)),
		sources: make(map[string]string, len(fleet.Sources)),
	}
	for i := range fleet.Projects {
		p := &fleet.Projects[i]
		if _, dup := ps.specs[p.Metadata.Name]; dup {
			continue // validation refuses it; the first definition counts
		}
		ps.specs[p.Metadata.Name] = &p.Spec
		r := project.FromSpec(p.Metadata.Name, p.Spec)
		ps.rules[p.Metadata.Name] = &r
	}
	for _, s := range fleet.Sources {
		if _, dup := ps.sources[s.Metadata.Name]; !dup {
			ps.sources[s.Metadata.Name] = v1alpha1.SourceURL(s.Spec)
		}
	}
	return ps
}

// renderBudget is the budget r's renders run under (see [v1alpha1.ResolveRenderBudget]), nil
// when it is the one an agent renders under without one (opts.AgentDefaults, or nothing
// set at all): every assignment is in every document of its clusters, so a budget is carried
// only where it says something. refused says why r may not have what it asks.
func (ps projects) renderBudget(opts Options, r *v1alpha1.Release) (budget *v1alpha1.BudgetLimits, refused string) {
	name := r.Spec.ProjectOrDefault()
	var project *v1alpha1.RenderBudget
	if spec := ps.specs[name]; spec != nil {
		project = spec.RenderBudget
	}
	b, err := v1alpha1.ResolveRenderBudget(opts.RenderBudget, name, project, r.Spec.RenderBudget)
	if err != nil {
		return nil, err.Error()
	}
	if b == (v1alpha1.BudgetLimits{}) || b == opts.AgentDefaults {
		return nil, ""
	}
	return &b, ""
}

// bound returns the rules a release's assignments carry, the clusters its project lets it
// target, and the rule of its project it breaks ("" when none).
func (ps projects) bound(r *v1alpha1.Release) (rules *project.Rules, clusters v1alpha1.LabelSelector, refused string) {
	name := r.Spec.ProjectOrDefault()
	spec, defined := ps.specs[name]
	switch {
	case !defined && name == v1alpha1.ProjectPlatform:
		return nil, v1alpha1.LabelSelector{}, "" // the built-in platform project: no bounds
	case !defined:
		return nil, v1alpha1.LabelSelector{}, fmt.Sprintf("project %q is not defined", name)
	}
	rules, clusters = ps.rules[name], spec.ClusterSelector
	if src := r.Spec.Source; !spec.AllowsSource(src, ps.sources[src]) {
		return rules, clusters, fmt.Sprintf("project %s does not allow source %q (spec.sources: %s)", name, src, list(spec.Sources))
	}
	// Every other source the release reads a file of (values files, patch files) is bound by
	// the same rule: otherwise a team could read any file of the platform's sources.
	for _, ref := range r.Spec.FileSourceRefs() {
		if why := spec.RefusedSourceRef(name, ref.Source, ps.sources[ref.Source]); why != "" {
			return rules, clusters, ref.Field + ": " + why
		}
	}
	if ns := r.Spec.Namespace; ns != "" && !spec.AllowsNamespace(ns) {
		return rules, clusters, fmt.Sprintf("project %s does not allow namespace %q (spec.namespaces: %s)", name, ns, list(spec.Namespaces))
	}
	return rules, clusters, ""
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// selectorText reads "env=dev, tier=1".
func selectorText(sel v1alpha1.LabelSelector) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		parts = append(parts, k+"="+sel.MatchLabels[k])
	}
	return strings.Join(parts, ", ")
}

func clusterCount(n int) string {
	if n == 1 {
		return "1 cluster"
	}
	return fmt.Sprintf("%d clusters", n)
}
