package notify

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// healthy is web on cluster c1, applied and Ready on the desired revision, heard from.
func healthy(release, cluster string) Assignment {
	return Assignment{
		Release: release, Cluster: cluster, ClusterLabels: map[string]string{"env": "prod"}, Phase: "Ready",
		DesiredRevision: "main@sha1:1111", AppliedRevision: "main@sha1:1111", Reachable: true, LastSeen: t0,
	}
}

func with(a Assignment, f func(*Assignment)) Assignment { f(&a); return a }

func failed(a Assignment) Assignment {
	return with(a, func(a *Assignment) { a.Phase, a.Error = "Failed", "Deployment/web: boom" })
}
func drifted(a Assignment) Assignment    { return with(a, func(a *Assignment) { a.Drifted = true }) }
func conflicted(a Assignment) Assignment { return with(a, func(a *Assignment) { a.Conflicts = 2 }) }
func unreachable(a Assignment) Assignment {
	return with(a, func(a *Assignment) { a.Reachable = false })
}
func newRevision(a Assignment) Assignment {
	return with(a, func(a *Assignment) { a.DesiredRevision, a.Phase = "main@sha1:2222", "Progressing" })
}
func neverSeen(a Assignment) Assignment {
	return with(a, func(a *Assignment) {
		a.Reachable, a.LastSeen, a.AppliedRevision, a.Phase = false, time.Time{}, "", "Pending"
	})
}

type step struct {
	at      time.Duration
	as      []Assignment
	unknown bool     // reachability not known yet
	want    []string // "type release/cluster", in order
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	web := healthy("web", "c1")
	db := healthy("db", "c2")
	all := Rules{SkewAfter: 10 * time.Minute, FlapWindow: 5 * time.Minute}
	tests := []struct {
		name  string
		rules Rules
		steps []step
	}{
		{
			name: "failure then recovery: one event each, not one per evaluation", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{web, db}},
				{at: 5 * time.Second, as: []Assignment{failed(web), db}, want: []string{"failed web/c1"}},
				{at: 10 * time.Second, as: []Assignment{failed(web), db}},
				{at: 15 * time.Second, as: []Assignment{failed(web), db}},
				{at: 20 * time.Second, as: []Assignment{web, db}, want: []string{"recovered web/c1"}},
				{at: 25 * time.Second, as: []Assignment{web, db}},
			},
		},
		{
			name: "recovered waits for Ready on the desired artifact", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{failed(web)}, want: []string{"failed web/c1"}},
				{at: time.Second, as: []Assignment{with(web, func(a *Assignment) { a.Phase = "Progressing" })}},
				{at: 2 * time.Second, as: []Assignment{with(web, func(a *Assignment) { a.DesiredDigest, a.AppliedDigest = "sha256:b", "sha256:a" })}},
				{at: 3 * time.Second, as: []Assignment{with(web, func(a *Assignment) { a.DesiredDigest, a.AppliedDigest = "sha256:b", "sha256:b" })}, want: []string{"recovered web/c1"}},
			},
		},
		{
			name: "conflicts are a failure", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{conflicted(web)}, want: []string{"failed web/c1"}},
				{at: time.Second, as: []Assignment{web}, want: []string{"recovered web/c1"}},
			},
		},
		{
			name: "a flapping assignment is announced once per window, with its flaps", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{failed(web)}, want: []string{"failed web/c1"}},
				{at: 1 * time.Minute, as: []Assignment{web}, want: []string{"recovered web/c1"}},
				{at: 2 * time.Minute, as: []Assignment{failed(web)}},
				{at: 3 * time.Minute, as: []Assignment{web}},
				{at: 4 * time.Minute, as: []Assignment{failed(web)}},
				{at: 5 * time.Minute, as: []Assignment{failed(web)}, want: []string{"failed web/c1 flaps=2"}},
				{at: 6 * time.Minute, as: []Assignment{web}, want: []string{"recovered web/c1"}},
			},
		},
		{
			name: "a flap that ends healthy says nothing more", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{drifted(web)}, want: []string{"drifted web/c1"}},
				{at: time.Minute, as: []Assignment{web}, want: []string{"recovered web/c1"}},
				{at: 2 * time.Minute, as: []Assignment{drifted(web)}},
				{at: 3 * time.Minute, as: []Assignment{web}},
				{at: 10 * time.Minute, as: []Assignment{web}},
			},
		},
		{
			name: "skew after the grace, recovered when the new revision is applied", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{newRevision(web), newRevision(db)}},
				{at: 9 * time.Minute, as: []Assignment{newRevision(web), with(db, func(a *Assignment) { a.DesiredRevision, a.AppliedRevision = "main@sha1:2222", "main@sha1:2222" })}},
				{at: 10 * time.Minute, as: []Assignment{newRevision(web), db}, want: []string{"skewed web/c1 since=0s"}},
				{at: 11 * time.Minute, as: []Assignment{with(web, func(a *Assignment) { a.DesiredRevision, a.AppliedRevision = "main@sha1:2222", "main@sha1:2222" }), db},
					want: []string{"recovered web/c1"}},
			},
		},
		{
			name: "an unreachable cluster is not also skewed", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{unreachable(newRevision(web))}, want: []string{"unreachable web/c1"}},
				{at: 20 * time.Minute, as: []Assignment{unreachable(newRevision(web))}},
				// Back: the grace for skew counts from the last time it was unreachable.
				{at: 21 * time.Minute, as: []Assignment{newRevision(web)}},
				{at: 29 * time.Minute, as: []Assignment{newRevision(web)}},
				{at: 30 * time.Minute, as: []Assignment{newRevision(web)}, want: []string{"skewed web/c1 since=20m0s"}},
				{at: 32 * time.Minute, as: []Assignment{with(web, func(a *Assignment) { a.DesiredRevision, a.AppliedRevision = "main@sha1:2222", "main@sha1:2222" })},
					want: []string{"recovered web/c1 cleared=[unreachable skewed]"}},
			},
		},
		{
			name: "a cluster whose agent never connected is skewed, not unreachable", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{neverSeen(web)}},
				{at: 10 * time.Minute, as: []Assignment{neverSeen(web)}, want: []string{"skewed web/c1 since=0s"}},
			},
		},
		{
			name: "unreachable, and nothing while reachability is unknown after a restart", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{unreachable(web), db}, unknown: true},
				{at: time.Minute, as: []Assignment{unreachable(web), unreachable(db)}, want: []string{"unreachable db/c2", "unreachable web/c1"}},
				{at: 2 * time.Minute, as: []Assignment{unreachable(web), unreachable(db)}, unknown: true},
				{at: 3 * time.Minute, as: []Assignment{web, unreachable(db)}, unknown: true},
				{at: 4 * time.Minute, as: []Assignment{web, db}, want: []string{"recovered db/c2", "recovered web/c1"}},
			},
		},
		{
			name: "recovered waits for every announced condition to end", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{drifted(failed(web))}, want: []string{"failed web/c1", "drifted web/c1"}},
				{at: time.Second, as: []Assignment{failed(web)}},
				{at: 2 * time.Second, as: []Assignment{web}, want: []string{"recovered web/c1 cleared=[failed drifted]"}},
			},
		},
		{
			name:  "events not enabled are neither sent nor recovered from",
			rules: Rules{Events: []string{Failed, Recovered}, SkewAfter: time.Minute},
			steps: []step{
				{at: 0, as: []Assignment{drifted(web)}},
				{at: time.Second, as: []Assignment{web}},
				{at: 2 * time.Second, as: []Assignment{failed(web)}, want: []string{"failed web/c1"}},
				{at: 3 * time.Second, as: []Assignment{web}, want: []string{"recovered web/c1"}},
			},
		},
		{
			name:  "without recovered, the next failure is still announced",
			rules: Rules{Events: []string{Failed}},
			steps: []step{
				{at: 0, as: []Assignment{failed(web)}, want: []string{"failed web/c1"}},
				{at: time.Second, as: []Assignment{web}},
				{at: 2 * time.Second, as: []Assignment{failed(web)}, want: []string{"failed web/c1"}},
			},
		},
		{
			name:  "release and cluster selectors",
			rules: Rules{Releases: []string{"web", "db"}, ClusterLabels: map[string]string{"env": "prod"}},
			steps: []step{
				{at: 0, as: []Assignment{
					failed(web), failed(healthy("other", "c1")),
					failed(with(db, func(a *Assignment) { a.ClusterLabels = map[string]string{"env": "staging"} })),
				}, want: []string{"failed web/c1"}},
			},
		},
		{
			name: "an assignment that leaves the fleet is forgotten", rules: all,
			steps: []step{
				{at: 0, as: []Assignment{failed(web)}, want: []string{"failed web/c1"}},
				{at: time.Second, as: nil},
				{at: 10 * time.Minute, as: []Assignment{failed(web)}, want: []string{"failed web/c1"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var st State
			for i, s := range tt.steps {
				// State goes through JSON at every step, as the hub persists it.
				data, err := json.Marshal(st)
				if err != nil {
					t.Fatal(err)
				}
				var restored State
				if err := json.Unmarshal(data, &restored); err != nil {
					t.Fatal(err)
				}
				next, events := Evaluate(tt.rules, restored, Snapshot{Time: t0.Add(s.at), Assignments: s.as, ReachabilityKnown: !s.unknown})
				var got []string
				for _, e := range events {
					d := fmt.Sprintf("%s %s/%s", e.Type, e.Release, e.Cluster)
					if e.Flaps > 0 {
						d += fmt.Sprintf(" flaps=%d", e.Flaps)
					}
					if e.Since != nil {
						d += fmt.Sprintf(" since=%v", e.Since.Sub(t0))
					}
					if len(e.Cleared) > 1 {
						d += fmt.Sprintf(" cleared=%v", e.Cleared)
					}
					if !e.Time.Equal(t0.Add(s.at)) {
						t.Errorf("step %d: event time %v", i, e.Time)
					}
					got = append(got, d)
				}
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Fatalf("step %d (at %v): events (-want +got):\n%s", i, s.at, diff)
				}
				st = next
			}
		})
	}
}

func TestStateKeepsOnlyWhatMatters(t *testing.T) {
	t.Parallel()
	r := Rules{FlapWindow: time.Minute, SkewAfter: time.Minute}
	web, db := healthy("web", "c1"), healthy("db", "c1")
	st, _ := Evaluate(r, State{}, Snapshot{Time: t0, Assignments: []Assignment{failed(web), db}, ReachabilityKnown: true})
	if _, ok := st.Assignments["db/c1"]; ok || len(st.Assignments) != 1 {
		t.Errorf("state after a failure: %+v; want only web/c1", st.Assignments)
	}
	st, _ = Evaluate(r, st, Snapshot{Time: t0.Add(time.Second), Assignments: []Assignment{web, db}, ReachabilityKnown: true})
	if len(st.Assignments) != 1 {
		t.Errorf("within the flap window: %+v; want web/c1 remembered", st.Assignments)
	}
	st, _ = Evaluate(r, st, Snapshot{Time: t0.Add(2 * time.Minute), Assignments: []Assignment{web, db}, ReachabilityKnown: true})
	if len(st.Assignments) != 0 {
		t.Errorf("healthy past the flap window: %+v; want nothing", st.Assignments)
	}
}

func TestEvaluateDoesNotChangeItsInput(t *testing.T) {
	t.Parallel()
	r := Rules{FlapWindow: time.Minute}
	st, _ := Evaluate(r, State{}, Snapshot{Time: t0, Assignments: []Assignment{failed(healthy("web", "c1"))}, ReachabilityKnown: true})
	before, _ := json.Marshal(st)
	Evaluate(r, st, Snapshot{Time: t0.Add(time.Second), Assignments: []Assignment{healthy("web", "c1")}, ReachabilityKnown: true})
	Evaluate(r, st, Snapshot{Time: t0.Add(2 * time.Second), Assignments: []Assignment{failed(healthy("web", "c1"))}, ReachabilityKnown: true})
	after, _ := json.Marshal(st)
	if string(before) != string(after) {
		t.Errorf("state changed by Evaluate:\n%s\n%s", before, after)
	}
}

// BenchmarkEvaluate1000x20 evaluates a fleet of 1,000 clusters x 20 releases, one cluster in
// 50 failed and nothing changing (the cost the hub pays every few seconds), against the
// baseline of indexing the same assignments by key: the least any evaluation does.
func BenchmarkEvaluate1000x20(b *testing.B) {
	var as []Assignment
	for c := range 1000 {
		for r := range 20 {
			a := healthy(fmt.Sprintf("r%02d", r), fmt.Sprintf("c%04d", c))
			if c%50 == 0 {
				a = failed(a)
			}
			as = append(as, a)
		}
	}
	b.Run("baseline=index", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m := make(map[string]Assignment, len(as))
			for _, a := range as {
				m[key(a)] = a
			}
		}
	})
	b.Run("evaluate", func(b *testing.B) {
		rules := Rules{SkewAfter: 10 * time.Minute, FlapWindow: 5 * time.Minute}
		st, _ := Evaluate(rules, State{}, Snapshot{Time: t0, Assignments: as, ReachabilityKnown: true})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			st, _ = Evaluate(rules, st, Snapshot{Time: t0.Add(time.Duration(i) * time.Second), Assignments: as, ReachabilityKnown: true})
		}
	})
}
