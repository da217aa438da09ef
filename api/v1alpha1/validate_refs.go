package v1alpha1

import (
	"fmt"
	"strings"
)

// SourceRef is a source a release names beside spec.source, and the field that names it.
type SourceRef struct {
	// Field is the field's path: "spec.helm.valuesFiles[0].source".
	Field  string
	Source string
}

// FileSourceRefs returns every source the release's file references name explicitly: Helm
// values files and post-render patch files. A reference without a source means spec.source
// and is left out: spec.source is checked on its own. Every field of a release that names a
// Source must be listed here, since a project's spec.sources is checked against this list:
// a reference it misses would let a team read any file of any source into its release.
func (s ReleaseSpec) FileSourceRefs() []SourceRef {
	h := s.Helm
	if h == nil {
		return nil
	}
	var refs []SourceRef
	for i, f := range h.ValuesFiles {
		if f.Source != "" {
			refs = append(refs, SourceRef{Field: fmt.Sprintf("spec.helm.valuesFiles[%d].source", i), Source: f.Source})
		}
	}
	if h.PostRender != nil {
		for i, p := range h.PostRender.Patches {
			if p.Source != "" {
				refs = append(refs, SourceRef{Field: fmt.Sprintf("spec.helm.postRender.patches[%d].source", i), Source: p.Source})
			}
		}
	}
	return refs
}

// RefusedSourceRef says why project may not read the source name (whose URL is url, see
// [SourceURL]) through a file reference, or "" when it may: "source "platform-secrets" is not
// among project team-a's sources (spec.sources: team-a-*)".
func (s ProjectSpec) RefusedSourceRef(project, name, url string) string {
	if s.AllowsSource(name, url) {
		return ""
	}
	list := "none"
	if len(s.Sources) > 0 {
		list = strings.Join(s.Sources, ", ")
	}
	return fmt.Sprintf("source %q is not among project %s's sources (spec.sources: %s)", name, project, list)
}

// SourceURL is the URL a project's URL patterns match for a source: a Git source's URL, an
// OCI source's oci:// URL, and for a Helm source the chart's place in its repository,
// repository + "/" + chart ("https://charts.example.com/team-a/web",
// "oci://registry.example.com/team-a/web"), so that "https://charts.example.com/team-a/*"
// allows team-a's charts of that repository and no other team's. "" for a source with none.
func SourceURL(s SourceSpec) string {
	switch {
	case s.Git != nil:
		return s.Git.URL
	case s.OCI != nil:
		return s.OCI.URL
	case s.Helm != nil:
		if s.Helm.Repository == "" || s.Helm.Chart == "" {
			return ""
		}
		return strings.TrimSuffix(s.Helm.Repository, "/") + "/" + s.Helm.Chart
	}
	return ""
}

// validateDependencyHosts checks spec.helm.dependencyHosts: host names, host:port or
// *.domain, as the operator's credential hosts are written.
func validateDependencyHosts(hosts []string, add func(field, msg string)) {
	for i, h := range hosts {
		if h == "" || strings.ContainsAny(h, "/@ ?#") || strings.Contains(h, "://") || strings.Count(h, "*") > 1 ||
			strings.Contains(h, "*") && !strings.HasPrefix(h, "*.") {
			add(fmt.Sprintf("spec.helm.dependencyHosts[%d]", i), fmt.Sprintf("%q: want a host name, host:port or *.domain", h))
		}
	}
}
