package v1alpha1

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// helmChartNameRE is a chart name as Helm and chart repositories write them (a directory and
// file name); under oci:// it is also a repository component, which ociRepositoryRE checks.
var helmChartNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,249}$`)

// validateHelmSource checks Source.spec.helm.
func validateHelmSource(h *HelmSource, add func(field, msg string)) {
	oci := validateHelmRepository(h.Repository, h.Insecure, add)
	switch {
	case h.Chart == "":
		add("spec.helm.chart", "must be set: the chart's name, as in the repository's index or the last component of its OCI repository")
	case strings.Contains(h.Chart, "/"):
		add("spec.helm.chart", fmt.Sprintf("%q is a path, not a chart name: put the path in spec.helm.repository", h.Chart))
	case !helmChartNameRE.MatchString(h.Chart):
		add("spec.helm.chart", fmt.Sprintf("%q is not a chart name: letters, digits, '.', '_' and '-', starting with a letter or digit", h.Chart))
	case oci && !ociRepositoryRE.MatchString(h.Chart):
		add("spec.helm.chart", fmt.Sprintf("%q cannot name an OCI repository: lowercase letters, digits and separators (., _, -)", h.Chart))
	}
	if h.Version != "" {
		if _, err := semver.NewConstraint(h.Version); err != nil {
			add("spec.helm.version", fmt.Sprintf("%q is not a semver range or version: %v", h.Version, err))
		}
	}
	validateDependencyHosts(h.DependencyHosts, add)
}

// validateHelmRepository checks spec.helm.repository and reports whether it is an OCI registry.
func validateHelmRepository(raw string, insecure bool, add func(field, msg string)) (oci bool) {
	const field, want = "spec.helm.repository", "https://... (a chart repository) or oci://registry/path"
	if raw == "" {
		add(field, "must be set: "+want)
		return false
	}
	u, err := url.Parse(raw)
	if err != nil {
		add(field, fmt.Sprintf("is not a URL: want %s", want))
		return false
	}
	switch {
	case u.User != nil:
		add(field, "must not hold credentials: name credentials the hub's operator configured with spec.helm.credentials")
	case u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "oci":
		add(field, fmt.Sprintf("%q: scheme %q, want %s", raw, u.Scheme, want))
	case u.Host == "" || !ociRegistryRE.MatchString(u.Host):
		add(field, fmt.Sprintf("%q has no valid host: want %s", raw, want))
	case u.RawQuery != "" || u.Fragment != "":
		add(field, fmt.Sprintf("%q has a query or fragment: the repository is named by its URL alone", raw))
	case u.Scheme == "http" && !insecure:
		add(field, fmt.Sprintf("%q is plain HTTP: use https://, or set spec.helm.insecure: true to accept it", raw))
	case u.Scheme == "oci":
		path := strings.Trim(u.Path, "/")
		switch {
		case strings.ContainsAny(path, "@:"):
			add(field, fmt.Sprintf("%q names a tag or digest: the repository is a registry path, spec.helm.version selects the tag", raw))
		case path != "" && !ociRepositoryRE.MatchString(path):
			add(field, fmt.Sprintf("path %q is not an OCI repository path: lowercase letters, digits and separators (., _, -, /)", path))
		}
		return true
	}
	return false
}
