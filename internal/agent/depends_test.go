package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/desired"
)

func TestDependencyOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		deps   map[string][]string // release -> dependsOn, releases in the order of names
		names  []string
		want   string
		cycles map[string]string
	}{
		{name: "no dependencies keep their order", names: []string{"b", "a", "c"}, want: "b a c"},
		{name: "a dependency first", names: []string{"web", "db"}, deps: map[string][]string{"web": {"db"}}, want: "db web"},
		{
			name: "a chain", names: []string{"app", "cache", "db"},
			deps: map[string][]string{"app": {"cache"}, "cache": {"db"}}, want: "db cache app",
		},
		{
			name: "a diamond keeps the document order where it can", names: []string{"api", "web", "db", "cache"},
			deps: map[string][]string{"api": {"db", "cache"}, "web": {"db"}, "cache": {"db"}}, want: "db web cache api",
		},
		{name: "an unassigned dependency does not hold the order", names: []string{"web", "db"}, deps: map[string][]string{"web": {"cache"}}, want: "web db"},
		{
			name: "a cycle comes last and is named", names: []string{"a", "b", "c", "d"},
			deps: map[string][]string{"a": {"b"}, "b": {"a"}, "c": {"a"}},
			want: "d a b c", cycles: map[string]string{"a": `"a" -> "b" -> "a"`, "b": `"b" -> "a" -> "b"`},
		},
		{name: "a release that depends on itself", names: []string{"a", "b"}, deps: map[string][]string{"a": {"a"}}, want: "b a", cycles: map[string]string{"a": `"a" -> "a"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in []*desired.Assignment
			for _, n := range tc.names {
				in = append(in, &desired.Assignment{Release: n, DependsOn: tc.deps[n]})
			}
			got, cycles := dependencyOrder(in)
			var names []string
			for _, as := range got {
				names = append(names, as.Release)
			}
			if strings.Join(names, " ") != tc.want {
				t.Errorf("order %v, want %s", names, tc.want)
			}
			if fmt.Sprint(cycles) != fmt.Sprint(tc.cycles) {
				t.Errorf("cycles %v, want %v", cycles, tc.cycles)
			}
		})
	}
}
