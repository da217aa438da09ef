package v1alpha1

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// variableName is Flux's rule for substitution variables: a name envsubst could never
// reference is refused rather than silently ignored.
var variableName = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)

// ClusterNameVariable is the variable every assignment gets from its cluster. Releases cannot
// set it: a manifest that says ${cluster_name} must get the name of the cluster it runs in.
const ClusterNameVariable = "cluster_name"

// Validate checks a fleet built in code the way [Parse] checks what it reads. Problems carry
// no file; unnamed objects are named by their index ("releases[3]").
func (f *Fleet) Validate() error {
	if problems := validate(f, nil, nil); len(problems) > 0 {
		return &InvalidError{Problems: problems}
	}
	return nil
}

// origins says where each object of a parsed fleet came from.
type origins struct {
	sources, releases, notifications, projects, windows []origin
	// broken names the sources whose documents failed to decode; brokenProjects the
	// projects.
	broken, brokenProjects map[string]bool
}

type origin struct {
	file string
	doc  int
	line int // where the document starts
}

func (o *origins) of(kind string, i int) (origin, bool) {
	if o == nil {
		return origin{}, false
	}
	list := o.sources
	switch kind {
	case KindRelease:
		list = o.releases
	case KindNotification:
		list = o.notifications
	case KindProject:
		list = o.projects
	case KindWindow:
		list = o.windows
	}
	if i >= len(list) {
		return origin{}, false
	}
	return list[i], true
}

// validator collects problems for one fleet.
type validator struct {
	origins  *origins
	problems []Problem
}

// object returns a function that records problems of the i-th object of a kind.
func (v *validator) object(kind string, i int, name string) (file string, add func(field, msg string)) {
	o, known := v.origins.of(kind, i)
	var object string
	switch {
	case name != "":
		object = kind + "/" + name
	case known:
		object = fmt.Sprintf("%s in document %d", kind, o.doc)
	default:
		object = fmt.Sprintf("%ss[%d]", strings.ToLower(kind), i)
	}
	return o.file, func(field, msg string) {
		v.problems = append(v.problems, Problem{File: o.file, Line: o.line, Object: object, Field: field, Message: msg})
	}
}

func validate(f *Fleet, o *origins, t *Tenant) []Problem {
	v := &validator{origins: o}

	// Where each name was first defined, to report duplicates against it.
	sources := make(map[string]string)
	for i := range f.Sources {
		s := &f.Sources[i]
		file, add := v.object(KindSource, i, s.Metadata.Name)
		validateMeta(s.Metadata, add)
		checkDuplicate(sources, KindSource, s.Metadata.Name, file, add)
		validateSourceSpec(s.Spec, add)
	}

	projects := make(map[string]string)
	for i := range f.Projects {
		p := &f.Projects[i]
		file, add := v.object(KindProject, i, p.Metadata.Name)
		validateMeta(p.Metadata, add)
		checkDuplicate(projects, KindProject, p.Metadata.Name, file, add)
		validateProjectSpec(p.Metadata.Name, p.Spec, add)
		validateRenderBudget("spec.renderBudget", p.Spec.RenderBudget, add)
	}

	releases := make(map[string]string)
	for i := range f.Releases {
		r := &f.Releases[i]
		file, add := v.object(KindRelease, i, r.Metadata.Name)
		validateMeta(r.Metadata, add)
		checkDuplicate(releases, KindRelease, r.Metadata.Name, file, add)
		validateReleaseSpec(r.Spec, add)
		validateReleaseHelm(r.Spec.Helm, add)
		validateRenderBudget("spec.renderBudget", r.Spec.RenderBudget, add)
		if h := r.Spec.Helm; h != nil && h.ReleaseName == "" && len(r.Metadata.Name) > MaxHelmReleaseNameLength {
			add("spec.helm.releaseName", fmt.Sprintf("must be set: the release name %q is longer than the %d characters Helm allows a release name", r.Metadata.Name, MaxHelmReleaseNameLength))
		}
		validateDecryption(r.Spec.Decryption, add)
		for _, ref := range r.Spec.fileRefs() {
			if _, ok := sources[ref.source]; ref.source != "" && !ok && !t.hasSource(ref.source) && !(o != nil && o.broken[ref.source]) {
				add(ref.field, fmt.Sprintf("source %q is not defined", ref.source))
			}
		}

		_, defined := sources[r.Spec.Source]
		defined = defined || t.hasSource(r.Spec.Source)
		switch {
		case r.Spec.Source == "":
			add("spec.source", "must be set")
		case !defined && !(o != nil && o.broken[r.Spec.Source]):
			add("spec.source", fmt.Sprintf("source %q is not defined", r.Spec.Source))
		}
		if p := r.Spec.Project; t == nil && p != "" && p != ProjectPlatform {
			if _, defined := projects[p]; !defined && !(o != nil && o.brokenProjects[p]) {
				add("spec.project", fmt.Sprintf("project %q is not defined%s", p, knownProjects(projects)))
			}
		}
	}

	notifications := make(map[string]string)
	for i := range f.Notifications {
		n := &f.Notifications[i]
		file, add := v.object(KindNotification, i, n.Metadata.Name)
		validateMeta(n.Metadata, add)
		checkDuplicate(notifications, KindNotification, n.Metadata.Name, file, add)
		validateNotificationSpec(n.Spec, releases, add)
	}
	v.rollouts(f, releases)
	if t != nil {
		v.tenant(f, t)
	}
	return v.problems
}

func checkDuplicate(seen map[string]string, kind, name, file string, add func(field, msg string)) {
	if name == "" {
		return
	}
	first, dup := seen[name]
	if !dup {
		seen[name] = file
		return
	}
	switch {
	case first == "":
		add("metadata.name", fmt.Sprintf("%s %q is defined more than once", kind, name))
	case first == file:
		add("metadata.name", fmt.Sprintf("%s %q is already defined earlier in this file", kind, name))
	default:
		add("metadata.name", fmt.Sprintf("%s %q is already defined in %s", kind, name, first))
	}
}

func validateMeta(m ObjectMeta, add func(field, msg string)) {
	if m.Name == "" {
		add("metadata.name", "must be set")
	} else if msgs := content.IsDNS1123Label(m.Name); len(msgs) > 0 {
		add("metadata.name", fmt.Sprintf("%q is not a valid name: %s", m.Name, strings.Join(msgs, "; ")))
	}
	validateLabels("metadata.labels", m.Labels, add)
}

func validateLabels(field string, labels map[string]string, add func(field, msg string)) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		f := field + "[" + k + "]"
		if msgs := content.IsLabelKey(k); len(msgs) > 0 {
			add(f, fmt.Sprintf("label key %q is invalid: %s", k, strings.Join(msgs, "; ")))
		}
		if msgs := content.IsLabelValue(labels[k]); len(msgs) > 0 {
			add(f, fmt.Sprintf("label value %q is invalid: %s", labels[k], strings.Join(msgs, "; ")))
		}
	}
}

func validateSourceSpec(s SourceSpec, add func(field, msg string)) {
	if s.Interval.Duration != 0 && s.Interval.Duration < MinSourceInterval {
		add("spec.interval", fmt.Sprintf("must be at least %v, not %v", MinSourceInterval, s.Interval.Duration))
	}
	var kinds []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"git", s.Git != nil}, {"helm", s.Helm != nil}, {"oci", s.OCI != nil}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	switch {
	case len(kinds) == 0:
		add("spec", "set one of git, helm and oci: a source needs a Git repository, a Helm chart or an OCI artifact")
		return
	case len(kinds) > 1:
		add("spec", fmt.Sprintf("set exactly one of git, helm and oci, not %s", strings.Join(kinds, " and ")))
		return
	case s.Helm != nil:
		validateHelmSource(s.Helm, add)
		return
	case s.OCI != nil:
		validateOCISource(s.OCI, add)
		return
	}
	g := s.Git
	if g.URL == "" {
		add("spec.git.url", "must be set")
	}
	var refs []string
	for _, r := range []struct{ name, value string }{
		{"branch", g.Branch}, {"tag", g.Tag}, {"semver", g.Semver}, {"commit", g.Commit},
	} {
		if r.value != "" {
			refs = append(refs, r.name)
		}
	}
	if len(refs) > 1 {
		add("spec.git", fmt.Sprintf("set at most one of branch, tag, semver and commit, not %s", strings.Join(refs, " and ")))
	}
	if g.Semver != "" {
		if _, err := semver.NewConstraint(g.Semver); err != nil {
			add("spec.git.semver", fmt.Sprintf("%q is not a semver range: %v", g.Semver, err))
		}
	}
}

func validateReleaseSpec(s ReleaseSpec, add func(field, msg string)) {
	if len(s.Targets) == 0 {
		add("spec.targets", "must list at least one target (a target with an empty selector matches every cluster)")
	}
	for i, t := range s.Targets {
		validateLabels(fmt.Sprintf("spec.targets[%d].selector.matchLabels", i), t.Selector.MatchLabels, add)
	}
	for _, msg := range checkPath(s.Path) {
		add("spec.path", msg)
	}
	if s.Namespace != "" {
		if msgs := content.IsDNS1123Label(s.Namespace); len(msgs) > 0 {
			add("spec.namespace", fmt.Sprintf("%q is not a valid namespace name: %s", s.Namespace, strings.Join(msgs, "; ")))
		}
	}
	if s.Timeout.Duration < 0 {
		add("spec.timeout", fmt.Sprintf("must be positive, not %v", s.Timeout.Duration))
	}
	if s.Interval.Duration < 0 {
		add("spec.interval", fmt.Sprintf("must be positive, not %v", s.Interval.Duration))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Variables)) {
		f := "spec.variables[" + k + "]"
		switch {
		case !variableName.MatchString(k):
			add(f, fmt.Sprintf("variable name %q must match %s", k, variableName))
		case k == ClusterNameVariable:
			add(f, fmt.Sprintf("%s is set from the cluster and cannot be overridden", ClusterNameVariable))
		}
	}
}
