// Package deptest checks, in tests, which packages a binary links: the agent must stay free
// of the hub, the simulator, cloud SDKs and SQL drivers, however an import creeps in.
package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

// Rule forbids the packages a binary links whose path starts with Prefix, except those that
// start with one of Except.
type Rule struct {
	Prefix string
	Why    string
	Except []string
}

// Check fails t for every package of pkg's build (go list -deps) that a rule forbids, with the
// rule's reason.
func Check(t *testing.T, pkg string, rules []Rule) {
	t.Helper()
	CheckTags(t, pkg, "", rules)
}

// CheckTags is Check for pkg built with the build tags tags (comma-separated, as go build
// -tags takes them): for what a binary links as the Makefile builds it.
func CheckTags(t *testing.T, pkg, tags string, rules []Rule) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-tags", tags, pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps -tags %q %s: %v", tags, pkg, err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps %s listed %d packages: %q", pkg, len(deps), deps)
	}
	for _, d := range deps {
		for _, r := range rules {
			if !matches(d, r.Prefix) {
				continue
			}
			excepted := false
			for _, e := range r.Except {
				excepted = excepted || matches(d, e)
			}
			if !excepted {
				t.Errorf("%s links %s: %s (see: go list -deps %s; go mod why -m, or go list -f '{{.ImportPath}}: {{.Imports}}')", pkg, d, r.Why, pkg)
			}
		}
	}
}

// matches reports whether pkg is prefix or under it (prefix ending in "/" matches anything
// under it only).
func matches(pkg, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(pkg, prefix)
	}
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}
