package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
)

func TestDependencyOrder(t *testing.T) {
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

func TestDependsOnWaitsForReady(t *testing.T) {
	r := newLoopRig(t, noon)
	dbv, webv := r.version("db", "v1"), r.version("web", "v1")
	web := app("web", "main@1", webv)
	web.DependsOn = []string{"db"}
	r.target.setFail("db", true)
	// web comes first in the document; db is reconciled first all the same.
	r.a.setDesired(desiredAt(1, nil, web, app("db", "main@1", dbv)))
	r.idleWhen("db failed, web waits", r.reported("web", 1), "db@v1 prune=true selfHeal=true")
	r.expect("web", wantStatus{phase: "Waiting", waiting: `release "db" is not Ready`, pending: "main@1"})

	// db becomes Ready at its retry, 2s later: web is applied in the same pass.
	r.target.setFail("db", false)
	r.clk.Advance(2 * time.Second)
	r.idle("db Ready, then web", "db@v1 prune=true selfHeal=true", "db@v1 prune=true selfHeal=true", "web@v1 prune=true selfHeal=true")
	r.expect("web", wantStatus{phase: "Ready", revision: "main@1"})

	// A new revision of db that fails holds web's new revision; web keeps main@1.
	dbv2, webv2 := r.version("db", "v2"), r.version("web", "v2")
	web2 := app("web", "main@2", webv2)
	web2.DependsOn = []string{"db"}
	r.target.setFail("db", true)
	r.a.setDesired(desiredAt(2, nil, web2, app("db", "main@2", dbv2)))
	r.idle("db v2 failed; web kept at v1", "db@v1 prune=true selfHeal=true", "db@v1 prune=true selfHeal=true", "web@v1 prune=true selfHeal=true",
		"db@v2 prune=true selfHeal=true", "web@v1 prune=true selfHeal=true")
	r.expect("web", wantStatus{phase: "Waiting", revision: "main@1", waiting: `release "db" is not Ready`, pending: "main@2"})

	// Restarted with the hub gone, db Ready: web follows from local state alone.
	r.hub.srv.Close()
	r.target.setFail("db", false)
	r.restart()
	r.idle("after a restart with the hub down", "db@v1 prune=true selfHeal=true", "db@v1 prune=true selfHeal=true", "web@v1 prune=true selfHeal=true",
		"db@v2 prune=true selfHeal=true", "web@v1 prune=true selfHeal=true", "db@v2 prune=true selfHeal=true", "web@v2 prune=true selfHeal=true")
	r.expect("web", wantStatus{phase: "Ready", revision: "main@2"})
}

func TestDependsOnWhatIsNotThere(t *testing.T) {
	r := newLoopRig(t, noon)
	webv, av, bv := r.version("web", "v1"), r.version("a", "v1"), r.version("b", "v1")
	web := app("web", "main@1", webv)
	web.DependsOn = []string{"cache"}
	a, b := app("a", "main@1", av), app("b", "main@1", bv)
	a.DependsOn, b.DependsOn = []string{"b"}, []string{"a"}
	r.a.setDesired(desiredAt(1, nil, web, a, b))
	r.idleWhen("all wait", func() bool { return len(r.statuses("b")) == 1 })
	r.expect("web", wantStatus{phase: "Waiting", waiting: `release "cache" is not assigned to this cluster`, pending: "main@1"})
	r.expect("a", wantStatus{phase: "Waiting", waiting: `dependsOn cycle: "a" -> "b" -> "a"`, pending: "main@1"})
	r.expect("b", wantStatus{phase: "Waiting", waiting: `dependsOn cycle: "b" -> "a" -> "b"`, pending: "main@1"})
}
