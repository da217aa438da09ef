package importer

import (
	"fmt"

	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// These checks mirror what v1alpha1 refuses, so that an entry the hub would refuse is
// reported and left out instead of making the whole imported fleet invalid.

var kindRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

func urlPatternProblem(p string) string {
	scheme, rest, _ := strings.Cut(p, "://")
	switch scheme {
	case "https", "http", "ssh", "file":
	default:
		return fmt.Sprintf("scheme %q is not a Git scheme", scheme)
	}
	host, _, _ := strings.Cut(rest, "/")
	switch {
	case host == "" && scheme != "file":
		return "no host"
	case strings.ContainsAny(p, "?#"):
		return "a query or fragment never matches"
	case strings.Contains(host, "@"):
		return "credentials in the URL"
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == ".." || seg == "." {
			return "a . or .. segment never matches"
		}
	}
	return ""
}

func namePatternProblem(p string) string {
	if p == "*" {
		return ""
	}
	if msgs := validation.IsDNS1123Label(strings.ReplaceAll(p, "*", "a")); len(msgs) > 0 {
		return "not a namespace name or pattern: " + strings.Join(msgs, "; ")
	}
	return ""
}

func groupKindProblem(gk v1alpha1.GroupKind) string {
	switch {
	case gk.Kind == "":
		return "no kind"
	case gk.Kind != "*" && !kindRE.MatchString(gk.Kind):
		return fmt.Sprintf("%q is not a kind", gk.Kind)
	case strings.Contains(gk.Group, "/"):
		return fmt.Sprintf("group %q has a version", gk.Group)
	case gk.Group != "" && gk.Group != "*" && len(validation.IsDNS1123Subdomain(gk.Group)) > 0:
		return fmt.Sprintf("%q is not an API group", gk.Group)
	}
	return ""
}

func validSemver(s string) bool {
	_, err := semver.NewConstraint(s)
	return err == nil
}

// jsonPointerOK checks p as v1alpha1 checks an ignore rule's path: RFC 6901, not the whole
// object.
func jsonPointerOK(p string) bool {
	if !strings.HasPrefix(p, "/") || p == "/" {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return false
		}
	}
	return true
}

// labelsProblem says what is wrong with a label selector's keys and values, or "".
func labelsProblem(m map[string]string) string {
	for _, k := range sortedKeys(m) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return fmt.Sprintf("label key %q: %s", k, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(m[k]); len(msgs) > 0 {
			return fmt.Sprintf("label value %q: %s", m[k], strings.Join(msgs, "; "))
		}
	}
	return ""
}
