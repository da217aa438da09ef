package helmchart

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// candidate is one version a repository offers, as the repository spells it (an index's
// version, an OCI tag) and parsed.
type candidate struct {
	spelled string
	v       *semver.Version
}

// pickVersion returns the newest candidate satisfying constraint. An empty constraint is the
// newest that is not a pre-release; otherwise pre-releases match only when the constraint
// names one (Masterminds/semver's rule, which Helm follows). Versions that do not parse are
// ignored, as Helm ignores them.
func pickVersion(cands []candidate, constraint string) (candidate, error) {
	var c *semver.Constraints
	if constraint != "" {
		var err error
		if c, err = semver.NewConstraint(constraint); err != nil {
			return candidate{}, fmt.Errorf("version %q is not a semver range: %v", constraint, err)
		}
	}
	sort.SliceStable(cands, func(i, k int) bool { return cands[i].v.GreaterThan(cands[k].v) })
	for _, cand := range cands {
		if c == nil && cand.v.Prerelease() == "" || c != nil && c.Check(cand.v) {
			return cand, nil
		}
	}
	if len(cands) == 0 {
		return candidate{}, errors.New("no versions with a semver version")
	}
	want := "a version that is not a pre-release"
	if c != nil {
		want = "a version satisfying " + constraint
	}
	return candidate{}, fmt.Errorf("no %s among %s", strings.TrimPrefix(want, "a "), listVersions(cands))
}

// listVersions names the newest few candidates, for errors.
func listVersions(cands []candidate) string {
	const shown = 8
	var names []string
	for i, c := range cands {
		if i == shown {
			names = append(names, fmt.Sprintf("and %d more", len(cands)-shown))
			break
		}
		names = append(names, c.spelled)
	}
	return strings.Join(names, ", ")
}
