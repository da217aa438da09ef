package access_test

import (
	"slices"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/access"
)

func TestScope(t *testing.T) {
	t.Parallel()
	release := func(name, project string) v1alpha1.Release {
		return v1alpha1.Release{Metadata: v1alpha1.ObjectMeta{Name: name}, Spec: v1alpha1.ReleaseSpec{Project: project}}
	}
	project := func(name string, sel map[string]string) v1alpha1.Project {
		return v1alpha1.Project{Metadata: v1alpha1.ObjectMeta{Name: name}, Spec: v1alpha1.ProjectSpec{ClusterSelector: v1alpha1.LabelSelector{MatchLabels: sel}}}
	}
	fleet := &v1alpha1.Fleet{
		Releases: []v1alpha1.Release{release("base", ""), release("a-web", "team-a"), release("b-web", "team-b"), release("c-web", "team-c")},
		Projects: []v1alpha1.Project{project("team-a", map[string]string{"team": "a"}), project("team-b", map[string]string{"team": "b"}), project("team-c", nil)},
	}
	a, b := map[string]string{"team": "a"}, map[string]string{"team": "b"}
	grant := func(role access.Role, projects ...string) access.Principal {
		return access.Principal{Actor: "t", Grants: []access.Grant{{Role: role, Projects: projects}}}
	}
	for _, tc := range []struct {
		name       string
		p          access.Principal
		releases   []string // seen, of base a-web b-web c-web
		clusterA   bool
		clusterB   bool
		everything bool
	}{
		{"admin", grant(access.Admin, "team-a"), []string{"base", "a-web", "b-web", "c-web"}, true, true, true},
		{"viewer of every project", grant(access.Viewer), []string{"base", "a-web", "b-web", "c-web"}, true, true, true},
		{"viewer of team-a", grant(access.Viewer, "team-a"), []string{"a-web"}, true, false, false},
		{"deployer of team-b", grant(access.Deployer, "team-b"), []string{"b-web"}, false, true, false},
		{"viewer of platform (not defined: every cluster)", grant(access.Viewer, "platform"), []string{"base"}, true, true, false},
		{"viewer of team-c (empty selector: every cluster)", grant(access.Viewer, "team-c"), []string{"c-web"}, true, true, false},
		{"viewer of an undefined project", grant(access.Viewer, "team-z"), nil, false, false, false},
		{"no grant", access.Principal{}, nil, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := access.NewScope(tc.p, fleet)
			var got []string
			for _, r := range fleet.Releases {
				if s.Release(r.Metadata.Name) {
					got = append(got, r.Metadata.Name)
				}
			}
			if len(got) != len(tc.releases) || (len(got) > 0 && !equal(got, tc.releases)) {
				t.Errorf("releases %v, want %v", got, tc.releases)
			}
			if s.Project("team-a") != (tc.everything || slices.Contains(tc.releases, "a-web")) {
				t.Errorf("project team-a: %v", s.Project("team-a"))
			}
			if s.Cluster(a) != tc.clusterA || s.Cluster(b) != tc.clusterB || s.All() != tc.everything {
				t.Errorf("cluster a %v, b %v, all %v; want %v %v %v", s.Cluster(a), s.Cluster(b), s.All(), tc.clusterA, tc.clusterB, tc.everything)
			}
		})
	}
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestParseGroupRole(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"platform-admins=admin":     "platform-admins admin",
		"team-a=deployer:team-a":    "team-a deployer:team-a",
		"auditors=viewer":           "auditors viewer",
		"both=viewer:team-a,team-b": "both viewer:team-a,team-b",
		"x=admin:team-a":            "error",
		"x=owner":                   "error",
		"=viewer":                   "error",
		"team-a":                    "error",
		"team-a=viewer:":            "error",
	} {
		group, g, err := access.ParseGroupRole(in)
		got := group + " " + g.String()
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("%q: %q (%v), want %q", in, got, err, want)
		}
	}
}
