package v1alpha1

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// The shapes of the OCI distribution spec: a repository path of lowercase components, a tag,
// and a sha256 digest; key names as `flotilla hub --verify-key NAME=FILE` takes them.
var (
	ociRepositoryRE = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`)
	ociTagRE        = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	ociDigestRE     = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	ociRegistryRE   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$`)
	verifyKeyNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)
)

// validateOCISource checks Source.spec.oci.
func validateOCISource(s *OCISource, add func(field, msg string)) {
	validateOCIURL(s.URL, add)
	var refs []string
	for _, r := range []struct{ name, value string }{{"tag", s.Tag}, {"semver", s.Semver}, {"digest", s.Digest}} {
		if r.value != "" {
			refs = append(refs, r.name)
		}
	}
	if len(refs) > 1 {
		add("spec.oci", fmt.Sprintf("set at most one of tag, semver and digest, not %s", strings.Join(refs, " and ")))
	}
	if s.Tag != "" && !ociTagRE.MatchString(s.Tag) {
		add("spec.oci.tag", fmt.Sprintf("%q is not a tag: letters, digits, '_', '.' and '-', at most 128, not starting with '.' or '-'", s.Tag))
	}
	if s.Digest != "" && !ociDigestRE.MatchString(s.Digest) {
		add("spec.oci.digest", fmt.Sprintf("%q is not a digest: want sha256: and 64 lowercase hex digits", s.Digest))
	}
	if s.Semver != "" {
		if _, err := semver.NewConstraint(s.Semver); err != nil {
			add("spec.oci.semver", fmt.Sprintf("%q is not a semver range: %v", s.Semver, err))
		}
	}
	if s.Verify != nil {
		if s.Verify.Cosign == nil {
			add("spec.oci.verify", "set cosign: {publicKeys: [NAME]}, or leave verify out")
		} else {
			validateCosignKeys(s.Verify.Cosign.PublicKeys, add)
		}
	}
}

func validateOCIURL(raw string, add func(field, msg string)) {
	const field, want = "spec.oci.url", "oci://registry[:port]/repository"
	if raw == "" {
		add(field, "must be set: "+want)
		return
	}
	rest, ok := strings.CutPrefix(raw, "oci://")
	if !ok {
		add(field, fmt.Sprintf("%q does not start with oci://: want %s", raw, want))
		return
	}
	host, repo, _ := strings.Cut(rest, "/")
	switch {
	case strings.Contains(host, "@"):
		add(field, "must not hold credentials: name credentials the hub's operator configured with spec.oci.credentials")
	case host == "" || !ociRegistryRE.MatchString(host):
		add(field, fmt.Sprintf("%q has no valid registry host: want %s", raw, want))
	case repo == "":
		add(field, fmt.Sprintf("%q names no repository: want %s", raw, want))
	case strings.ContainsAny(repo, "@:"):
		add(field, fmt.Sprintf("%q names a tag or digest: put it in spec.oci.tag or spec.oci.digest, the url names only the repository", raw))
	case !ociRepositoryRE.MatchString(repo):
		add(field, fmt.Sprintf("repository %q is not valid: lowercase letters, digits and separators (., _, -, /)", repo))
	}
}

func validateCosignKeys(keys []string, add func(field, msg string)) {
	const field = "spec.oci.verify.cosign.publicKeys"
	if len(keys) == 0 {
		add(field, "must name at least one key the hub's operator configured (flotilla hub --verify-key NAME=FILE)")
		return
	}
	seen := map[string]int{}
	for i, k := range keys {
		f := fmt.Sprintf("%s[%d]", field, i)
		if !verifyKeyNameRE.MatchString(k) {
			add(f, fmt.Sprintf("%q is not a key name: letters, digits, '.', '_' and '-', at most 63, starting with a letter or digit", k))
			continue
		}
		if j, dup := seen[k]; dup {
			add(f, fmt.Sprintf("key %q is already listed as publicKeys[%d]", k, j))
			continue
		}
		seen[k] = i
	}
}
