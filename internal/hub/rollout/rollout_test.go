package rollout

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// scenario is a fleet around one release, driven by the commands of testdata/*.txt:
//
//	rollout              body: the release's spec.rollout (YAML)
//	clusters             body: one cluster a line, "name key=value,... [unreachable]"
//	had r1 [c1 c2 ...]   the clusters' previous documents assign r1 (default: all)
//	new-revision r2      the source's newest artifact becomes r2
//	report c1 Ready [health=Current] [rev=r2] [at=-1m]
//	                     c1's agent reports (rev: default the one assigned now)
//	reachable c1 false   c1's agent is (un)reachable
//	block c1 reason...   c1's gates hold new revisions back; unblock c1
//	targets k=v,...      the release selects only the clusters with these labels ("all": every
//	                     one); a cluster that had it and is no longer selected is leaving
//	relabel c1 k=v,... [by=actor]
//	                     c1's labels change (by actor: the tombstone names them)
//	remove c1            c1 leaves the release
//	tick 5m              time passes, then a step
//	step                 a step now
//	reset                forget the rollout's state (a release never rolled out)
//	delete-release       the release leaves the fleet: StepRemoval; restore-release
//	pause|resume|abort|rollback|approve [wave] [by=actor]
//	                     a user's action, then a step; act ACTION for any other
//	view                 the rollout as the user API shows it
//
// Each step prints its events, the rollout's phase and message, and what each cluster is
// assigned with its status line. The state goes through JSON between steps, as the store
// keeps it.
type scenario struct {
	removed  bool              // the release was deleted: StepRemoval
	targets  map[string]string // nil: every cluster
	actors   map[string]string // who relabelled each cluster since the last step
	spec     *v1alpha1.Rollout
	newest   Artifact
	clusters []*Cluster
	st       State
	now      time.Time
}

func art(rev string) Artifact {
	if rev == "" || rev == "-" {
		return Artifact{}
	}
	return Artifact{Digest: "sha256:" + rev, Revision: rev, URL: "oci://hub/" + rev}
}

func TestScenarios(t *testing.T) {
	t.Parallel()
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &scenario{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := s.run(t, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func (s *scenario) cluster(t *testing.T, name string) *Cluster {
	for _, c := range s.clusters {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no cluster %q in the scenario", name)
	return nil
}

func (s *scenario) run(t *testing.T, d *datadriven.TestData) (string, error) {
	arg := func(i int) string {
		if i < len(d.CmdArgs) {
			return d.CmdArgs[i].Key
		}
		return ""
	}
	switch d.Cmd {
	case "rollout":
		var r v1alpha1.Rollout
		if err := yaml.Unmarshal([]byte(d.Input), &r); err != nil {
			t.Fatalf("rollout: %v", err)
		}
		s.spec = &r
		return "ok\n", nil
	case "clusters":
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			f := strings.Fields(line)
			c := &Cluster{Name: f[0], Labels: labels(f[1:]), Reachable: !slices.Contains(f, "unreachable")}
			s.clusters = append(s.clusters, c)
		}
		return "ok\n", nil
	case "had":
		for _, c := range s.clusters {
			if len(d.CmdArgs) == 1 || slices.ContainsFunc(d.CmdArgs[1:], func(a datadriven.CmdArg) bool { return a.Key == c.Name }) {
				c.Had = art(arg(0))
			}
		}
		return "ok\n", nil
	case "new-revision":
		s.newest = art(arg(0))
		return s.step(), nil
	case "report":
		c := s.cluster(t, arg(0))
		r := &Report{Digest: c.Had.Digest, Phase: arg(1), At: s.now}
		for _, a := range d.CmdArgs[2:] {
			switch a.Key {
			case "health":
				r.Health = a.Vals[0]
			case "rev":
				r.Digest = art(a.Vals[0]).Digest
			case "at":
				dur, err := time.ParseDuration(a.Vals[0])
				if err != nil {
					t.Fatal(err)
				}
				r.At = s.now.Add(dur)
			}
		}
		c.Report = r
		return s.step(), nil
	case "reachable":
		s.cluster(t, arg(0)).Reachable = arg(1) != "false"
		return s.step(), nil
	case "block":
		var words []string
		for _, a := range d.CmdArgs[1:] {
			words = append(words, a.String())
		}
		s.cluster(t, arg(0)).Blocked = strings.Join(words, " ")
		return s.step(), nil
	case "unblock":
		s.cluster(t, arg(0)).Blocked = ""
		return s.step(), nil
	case "relabel":
		var kv []string
		for _, a := range d.CmdArgs[1:] {
			if a.Key == "by" {
				if s.actors == nil {
					s.actors = map[string]string{}
				}
				s.actors[arg(0)] = a.Vals[0]
				continue
			}
			kv = append(kv, a.String())
		}
		s.cluster(t, arg(0)).Labels = labels(kv)
		return s.step(), nil
	case "targets":
		s.targets = nil
		if arg(0) != "all" {
			s.targets = labels(argStrings(d.CmdArgs))
		}
		return s.step(), nil
	case "add":
		s.clusters = append(s.clusters, &Cluster{Name: arg(0), Labels: labels([]string{strings.Join(argStrings(d.CmdArgs[1:]), ",")}), Reachable: true})
		return s.step(), nil
	case "remove":
		s.clusters = slices.DeleteFunc(s.clusters, func(c *Cluster) bool { return c.Name == arg(0) })
		return s.step(), nil
	case "tick":
		dur, err := time.ParseDuration(arg(0))
		if err != nil {
			t.Fatal(err)
		}
		s.now = s.now.Add(dur)
		return s.step(), nil
	case "step":
		return s.step(), nil
	case "delete-release":
		s.removed = true
		return s.step(), nil
	case "restore-release":
		s.removed = false
		return s.step(), nil
	case "reset":
		s.st = State{}
		return "ok\n", nil
	case "act", ActionPause, ActionResume, ActionAbort, ActionRollback, ActionApprove:
		actor := "user:alice"
		wave := ""
		action, args := d.Cmd, d.CmdArgs
		if action == "act" {
			action, args = arg(0), args[1:]
		}
		for _, a := range args {
			if a.Key == "by" {
				actor = a.Vals[0]
			} else {
				wave = a.Key
			}
		}
		e, err := Act(&s.st, action, wave, actor, s.now)
		if err != nil {
			if !errors.Is(err, ErrAction) {
				t.Fatalf("%s: error %v does not wrap ErrAction", action, err)
			}
			return "", err
		}
		return fmt.Sprintf("acted: %s %s by %s: %s\n", e.Type, e.Wave, e.Actor, e.Message) + s.step(), nil
	case "view":
		v := View("web", s.spec, &s.st)
		var b strings.Builder
		fmt.Fprintf(&b, "phase %s: %s\n", v.Phase, v.Message)
		fmt.Fprintf(&b, "revision %s, stable %s, queued %s\n", v.Revision, v.StableRevision, v.QueuedRevision)
		for _, w := range v.Waves {
			fmt.Fprintf(&b, "wave %s %s (maxConcurrent %d, maxFailures %d, failures %d", w.Name, w.Phase, w.MaxConcurrent, w.MaxFailures, w.Failures)
			if w.ApprovedBy != "" {
				fmt.Fprintf(&b, ", approved by %s", w.ApprovedBy)
			}
			b.WriteString(")\n")
			for _, c := range w.Clusters {
				fmt.Fprintf(&b, "  %s %s %s %s\n", c.Cluster, c.Phase, c.Revision, c.Message)
			}
		}
		return b.String(), nil
	}
	t.Fatalf("unknown command %q", d.Cmd)
	return "", nil
}

// selects reports whether the release's targets select c.
func (s *scenario) selects(c *Cluster) bool {
	for k, v := range s.targets {
		if c.Labels[k] != v {
			return false
		}
	}
	return true
}

func argStrings(args []datadriven.CmdArg) []string {
	var out []string
	for _, a := range args {
		out = append(out, a.String())
	}
	return out
}

func labels(fields []string) map[string]string {
	out := map[string]string{}
	for _, f := range fields {
		for _, kv := range strings.Split(f, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		}
	}
	return out
}

// step runs Step, keeps each cluster's decision as its previous document, and prints.
func (s *scenario) step() string {
	in := Input{Spec: s.spec, Newest: s.newest, Now: s.now}
	for _, c := range s.clusters {
		cl := *c
		cl.Actor = s.actors[c.Name]
		switch {
		case s.removed:
			if c.Had.Digest != "" {
				in.Clusters = append(in.Clusters, cl)
			}
		case s.selects(c):
			in.Clusters = append(in.Clusters, cl)
		case c.Had.Digest != "":
			in.Leaving = append(in.Leaving, cl)
		}
	}
	s.actors = nil
	var res Result
	if s.removed {
		in.Spec, in.Newest = nil, Artifact{}
		res = StepRemoval(&s.st, in)
	} else {
		res = Step(&s.st, in)
	}
	data, err := json.Marshal(s.st)
	if err != nil {
		panic(err)
	}
	var back State
	if err := json.Unmarshal(data, &back); err != nil {
		panic(fmt.Sprintf("state does not decode: %v\n%s", err, data))
	}
	s.st = back

	var b strings.Builder
	for _, e := range res.Events {
		fmt.Fprintf(&b, "event %s", e.Type)
		if e.Wave != "" {
			fmt.Fprintf(&b, " wave=%s", e.Wave)
		}
		if e.Cluster != "" {
			fmt.Fprintf(&b, " cluster=%s", e.Cluster)
		}
		fmt.Fprintf(&b, ": %s\n", e.Message)
	}
	fmt.Fprintf(&b, "phase %s", s.st.viewPhase())
	if s.st.Message != "" {
		fmt.Fprintf(&b, ": %s", s.st.Message)
	}
	b.WriteString("\n")
	if lv := s.st.Leaving; lv != nil {
		fmt.Fprintf(&b, "leaving: %s\n", lv.Message)
	}
	for _, c := range s.clusters {
		dec, ok := res.Assign[c.Name]
		if !ok && !(s.removed && c.Had.Digest == "") && (s.removed || s.selects(c)) {
			panic("no decision for " + c.Name)
		}
		rev := dec.Artifact.Revision
		if rev == "" {
			rev = "-"
		}
		fmt.Fprintf(&b, "%s: %s", c.Name, rev)
		if dec.Line != "" {
			fmt.Fprintf(&b, "  (%s)", dec.Line)
		}
		if ok && !s.removed && !s.selects(c) && dec.Artifact.Digest == "" && c.Had.Digest != "" {
			fmt.Fprintf(&b, "  (tombstone, by %q)", dec.Actor)
		}
		b.WriteString("\n")
		c.Had = dec.Artifact
	}
	if !res.Next.IsZero() {
		fmt.Fprintf(&b, "next in %s\n", res.Next.Sub(s.now))
	}
	return b.String()
}
