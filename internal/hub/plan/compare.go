package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/render"
)

// errLimit marks a render left out by a limit of the plan.
var errLimit = errors.New("left out: the plan's limit")

// rendered is one render's objects, by key, in render order.
type rendered struct {
	keys []string
	objs map[string]*unstructured.Unstructured
	err  error
}

// renderer renders assignments once per (artifact, path, variables), within the limits.
type renderer struct {
	ctx    context.Context
	cancel context.CancelFunc
	dir    func(ctx context.Context, digest string) (string, error)
	lim    Limits
	cache  map[string]*rendered
	// names are the variables each artifact names, by digest.
	names map[string]map[string]bool
	// charts says which (artifact, path) is a chart directory.
	charts map[string]bool
	diffs  map[[2]*rendered][]hubclient.PlanObject
	count  int
	// cut counts renders the limits left out, by limit.
	overCount, overTime int
	// sandbox renders in a bounded child process, as the agent does, so that a bomb fails its
	// own release's plan and never the hub. A plan renders one release at a time: one slot.
	sandbox render.Lazy
}

func newRenderer(ctx context.Context, dir func(context.Context, string) (string, error), lim Limits) *renderer {
	rctx, cancel := context.WithTimeout(ctx, lim.RenderTime)
	return &renderer{ctx: rctx, cancel: cancel, dir: dir, lim: lim, cache: map[string]*rendered{}, names: map[string]map[string]bool{}, charts: map[string]bool{}, diffs: map[[2]*rendered][]hubclient.PlanObject{},
		sandbox: render.Lazy{Options: render.SandboxOptions{Concurrent: 1}}}
}

func (r *renderer) close() { r.cancel() }

func (r *renderer) truncated() []string {
	var out []string
	if r.overCount > 0 {
		out = append(out, fmt.Sprintf("%d renders over the limit of %d were left out", r.overCount, r.lim.Renders))
	}
	if r.overTime > 0 {
		out = append(out, fmt.Sprintf("%d renders were left out when the render time limit of %s ran out", r.overTime, r.lim.RenderTime))
	}
	return out
}

// render returns what assignment a renders to.
//
// Every cluster's variables differ (cluster_name at least), yet most manifests read few of
// them: the result is cached by the values of the variables the artifact names anywhere
// (${name} in any of its files, a superset of those substituted), so that a thousand
// clusters that differ only in variables no manifest reads render once.
func (r *renderer) render(a desired.Assignment) *rendered {
	res := &rendered{objs: map[string]*unstructured.Unstructured{}}
	root, err := r.dir(r.ctx, a.Digest)
	if err != nil {
		res.err = fmt.Errorf("artifact %s of source %s (%s): %w", a.Digest, a.Source, a.Revision, err)
		return res
	}
	names, err := r.referenced(a.Digest, root)
	if err != nil {
		res.err = fmt.Errorf("artifact %s of source %s (%s): %w", a.Digest, a.Source, a.Revision, err)
		return res
	}
	key := a.Digest + "\x00" + a.Path
	chart, ok := r.charts[key]
	if !ok {
		chart = render.IsChart(root, a.Path)
		r.charts[key] = chart
	}
	chart = chart || a.Helm != nil
	if chart {
		// A chart renders with the release's name, namespace and Helm settings, and its values
		// (in other artifacts) may name any variable.
		settings, _ := json.Marshal(a.Helm)
		key += "\x00" + a.Release + "\x00" + a.Namespace + "\x00" + string(settings)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Vars)) {
		if names[k] || chart {
			key += "\x00" + k + "=" + a.Vars[k]
		}
	}
	if res, ok := r.cache[key]; ok {
		return res
	}
	switch {
	case r.count >= r.lim.Renders:
		r.overCount++
		res.err = fmt.Errorf("not rendered: %w of %d renders", errLimit, r.lim.Renders)
		return res // not cached: counted once per assignment left out
	case r.ctx.Err() != nil:
		r.overTime++
		res.err = fmt.Errorf("not rendered: %w of %s of rendering", errLimit, r.lim.RenderTime)
		return res
	}
	r.count++
	r.cache[key] = res
	// The hub reads no cluster: a chart sees Helm's default .Capabilities here, where the
	// agent gives it its cluster's.
	helm, err := render.HelmOptions(r.ctx, a, root, r.dir)
	if err != nil {
		res.err = err
		return res
	}
	// The hub holds no cluster's key: a release that decrypts is planned on its ciphertext.
	objs, err := r.sandbox.Render(r.ctx, render.Options{Root: root, Path: a.Path, Vars: a.Vars, Helm: helm, KeepEncrypted: a.Decryption != "",
		Budget: planBudget(a.RenderBudget), Project: planProject(a), Release: a.Release})
	if err != nil {
		if r.ctx.Err() != nil && errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
			r.overTime++
			res.err = fmt.Errorf("not rendered: %w of %s of rendering", errLimit, r.lim.RenderTime)
			delete(r.cache, key)
			return res
		}
		res.err = err
		return res
	}
	for _, o := range objs {
		k := objectKey(o)
		if _, dup := res.objs[k]; !dup {
			res.keys = append(res.keys, k)
		}
		res.objs[k] = o
	}
	return res
}

// sameHelm: a and b have the same Helm settings, and a chart renders with the same name and
// namespace.
func sameHelm(a, b desired.Assignment) bool {
	if a.Helm == nil && b.Helm == nil {
		return a.Namespace == b.Namespace && a.Release == b.Release
	}
	x, _ := json.Marshal(a.Helm)
	y, _ := json.Marshal(b.Helm)
	return string(x) == string(y) && a.Namespace == b.Namespace && a.Release == b.Release
}

// varRef is a variable reference as substitution reads it.
var varRef = regexp.MustCompile(`\$\{([_a-zA-Z][_a-zA-Z0-9]*)`)

// referenced returns the variable names the artifact's files name, once per artifact.
func (r *renderer) referenced(digest, root string) (map[string]bool, error) {
	if names, ok := r.names[digest]; ok {
		return names, nil
	}
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range varRef.FindAllSubmatch(data, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.names[digest] = names
	return names, nil
}

// objectKey identifies an object: apiVersion's group, kind, namespace, name.
func objectKey(o *unstructured.Unstructured) string {
	gv := o.GetAPIVersion()
	group, _, _ := strings.Cut(gv, "/")
	if !strings.Contains(gv, "/") {
		group = ""
	}
	return group + "\x00" + o.GetKind() + "\x00" + o.GetNamespace() + "\x00" + o.GetName()
}

// compare returns release's change on a cluster from assignment a (in force, when had) to b
// (the candidate's, when has); false when nothing changes.
func (r *renderer) compare(release string, a desired.Assignment, had bool, b desired.Assignment, has bool) (hubclient.PlanGroup, bool) {
	g := hubclient.PlanGroup{Release: release}
	var before, after *rendered
	switch {
	case !had && !has:
		return g, false
	case !had:
		g.Change = hubclient.PlanGained
		g.Assignment = []string{"path: " + shownPath(b.Path), "revision: " + b.Revision}
		after = r.render(b)
	case !has:
		g.Change = hubclient.PlanLost
		g.Assignment = []string{"removed from the cluster: its objects are pruned"}
		before = r.render(a)
	default:
		g.Change = hubclient.PlanChanged
		g.Assignment = settings(a, b)
		if a.Digest != b.Digest || a.Path != b.Path || !maps.Equal(a.Vars, b.Vars) || !sameHelm(a, b) {
			before, after = r.render(a), r.render(b)
		}
	}
	switch {
	case before != nil && before.err != nil:
		g.Error = "what runs now: " + before.err.Error()
	case after != nil && after.err != nil:
		g.Error = after.err.Error()
	default:
		g.Objects = r.diff(before, after)
	}
	if g.Change == hubclient.PlanChanged && len(g.Objects) == 0 && g.Error == "" && onlyRevision(g.Assignment) {
		// A new revision of the source that renders the same objects changes nothing on
		// the cluster: the agent applies what it already runs.
		return g, false
	}
	g.Hash = contentHash(g)
	for i := range g.Objects {
		g.Objects[i].Diff = cut(g.Objects[i].Diff, r.lim.DiffBytes)
	}
	return g, true
}

// onlyRevision: the settings that change are at most the revision and artifact.
func onlyRevision(lines []string) bool {
	for _, l := range lines {
		if !strings.HasPrefix(l, "revision: ") && !strings.HasPrefix(l, "artifact: ") {
			return false
		}
	}
	return true
}

func shownPath(p string) string {
	if p == "" {
		return "(the source's root)"
	}
	return p
}

// settings lists the assignment's settings that change, one line each.
func settings(a, b desired.Assignment) []string {
	var out []string
	line := func(name, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s: %s -> %s", name, x, y))
		}
	}
	line("path", shownPath(a.Path), shownPath(b.Path))
	line("revision", a.Revision, b.Revision)
	if a.Revision == b.Revision {
		line("artifact", a.Digest, b.Digest)
	}
	line("source", a.Source, b.Source)
	line("namespace", a.Namespace, b.Namespace)
	line("createNamespace", fmt.Sprint(a.CreateNamespace), fmt.Sprint(b.CreateNamespace))
	line("prune", fmt.Sprint(a.Prune), fmt.Sprint(b.Prune))
	line("selfHeal", fmt.Sprint(a.SelfHeal), fmt.Sprint(b.SelfHeal))
	line("wait", fmt.Sprint(a.Wait), fmt.Sprint(b.Wait))
	line("timeout", a.Timeout.String(), b.Timeout.String())
	line("interval", a.Interval.String(), b.Interval.String())
	for _, k := range slices.Sorted(maps.Keys(union(a.Vars, b.Vars))) {
		x, okx := a.Vars[k]
		y, oky := b.Vars[k]
		switch {
		case !okx:
			out = append(out, fmt.Sprintf("variable %s: set to %q", k, y))
		case !oky:
			out = append(out, fmt.Sprintf("variable %s: unset (was %q)", k, x))
		case x != y:
			out = append(out, fmt.Sprintf("variable %s: %q -> %q", k, x, y))
		}
	}
	for _, f := range []struct {
		name string
		x, y any
	}{{"project rules", a.Project, b.Project}, {"ignore", a.Ignore, b.Ignore}, {"respectManagers", a.RespectManagers, b.RespectManagers},
		{"dependsOn", a.DependsOn, b.DependsOn}, {"adopt", a.Adopt, b.Adopt}} {
		x, _ := json.Marshal(f.x)
		y, _ := json.Marshal(f.y)
		if string(x) != string(y) {
			out = append(out, fmt.Sprintf("%s: %s -> %s", f.name, x, y))
		}
	}
	return out
}

// diff is diffObjects, once per pair of renders: the clusters that share renders share it.
func (r *renderer) diff(before, after *rendered) []hubclient.PlanObject {
	k := [2]*rendered{before, after}
	if d, ok := r.diffs[k]; ok {
		return slices.Clone(d)
	}
	d := diffObjects(before, after)
	r.diffs[k] = d
	return slices.Clone(d)
}

// diffObjects compares two renders: the candidate's objects in its order, then those it
// removes in the order they were rendered.
func diffObjects(before, after *rendered) []hubclient.PlanObject {
	if before == nil {
		before = &rendered{}
	}
	if after == nil {
		after = &rendered{}
	}
	var out []hubclient.PlanObject
	for _, k := range after.keys {
		b := after.objs[k]
		a, had := before.objs[k]
		var x, y string
		if had {
			x, y = redactedPair(a, b)
			if x == y && secretEqual(a, b) {
				continue
			}
		} else {
			_, y = redactedPair(nil, b)
		}
		o := planObject(b, objectAction(had))
		o.Diff = unified(x, y, o, had, true)
		out = append(out, o)
	}
	for _, k := range before.keys {
		if _, kept := after.objs[k]; kept {
			continue
		}
		a := before.objs[k]
		x, _ := redactedPair(a, nil)
		o := planObject(a, hubclient.ObjectRemoved)
		o.Diff = unified(x, "", o, true, false)
		out = append(out, o)
	}
	return out
}

// objectAction is ObjectChanged for an object that was there, ObjectAdded otherwise.
func objectAction(had bool) string {
	if had {
		return hubclient.ObjectChanged
	}
	return hubclient.ObjectAdded
}

func planObject(o *unstructured.Unstructured, action string) hubclient.PlanObject {
	return hubclient.PlanObject{Action: action, APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
}

// unified is the unified diff of one object's YAML, named by the object.
func unified(x, y string, o hubclient.PlanObject, had, has bool) string {
	name := o.Kind + "/" + o.Name
	if o.Namespace != "" {
		name = o.Kind + "/" + o.Namespace + "/" + o.Name
	}
	from, to := "a/"+name, "b/"+name
	if !had {
		from = "/dev/null"
	}
	if !has {
		to = "/dev/null"
	}
	return unifiedDiff(x, y, from, to)
}

// redacted is how a Secret's value reads in a plan.
const (
	redacted        = "(redacted)"
	redactedChanged = "(redacted, changed)"
)

// isSecret: a core Secret, whose data and stringData values never leave the hub.
func isSecret(o *unstructured.Unstructured) bool {
	return o != nil && o.GetKind() == "Secret" && o.GetAPIVersion() == "v1"
}

// redactedPair returns the YAML of a and b (either may be nil) with Secrets' values
// replaced: "(redacted)", or "(redacted, changed)" in b where the value differs from a's.
func redactedPair(a, b *unstructured.Unstructured) (string, string) {
	return toYAML(redact(a, nil)), toYAML(redact(b, a))
}

func redact(o, before *unstructured.Unstructured) *unstructured.Unstructured {
	if o == nil || !isSecret(o) {
		return o
	}
	c := o.DeepCopy()
	for _, field := range []string{"data", "stringData"} {
		m, ok := c.Object[field].(map[string]any)
		if !ok {
			if _, set := c.Object[field]; set {
				c.Object[field] = redacted
			}
			continue
		}
		var prev map[string]any
		if before != nil {
			prev, _ = before.Object[field].(map[string]any)
		}
		for k, v := range m {
			m[k] = redacted
			if before != nil {
				if pv, ok := prev[k]; ok && fmt.Sprint(pv) != fmt.Sprint(v) {
					m[k] = redactedChanged
				}
			}
		}
	}
	return c
}

// secretEqual: two objects whose redacted YAML is equal are equal, unless they are Secrets
// with different values.
func secretEqual(a, b *unstructured.Unstructured) bool {
	if !isSecret(a) {
		return true
	}
	x, _ := json.Marshal(a.Object)
	y, _ := json.Marshal(b.Object)
	return string(x) == string(y)
}

func toYAML(o *unstructured.Unstructured) string {
	if o == nil {
		return ""
	}
	data, err := yaml.Marshal(o.Object)
	if err != nil {
		return fmt.Sprintf("(not shown: %v)\n", err)
	}
	return string(data)
}

// contentHash identifies a change by its full content, before any cut.
func contentHash(g hubclient.PlanGroup) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", g.Release, g.Change, g.Error)
	for _, l := range g.Assignment {
		fmt.Fprintf(h, "a%s\x00", l)
	}
	for _, o := range g.Objects {
		fmt.Fprintf(h, "o%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00", o.Action, o.APIVersion, o.Kind, o.Namespace, o.Name, o.Diff)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cut shortens s to at most n bytes at a line boundary, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := strings.LastIndexByte(s[:n], '\n')
	if i < 0 {
		i = n
	}
	return s[:i+1] + fmt.Sprintf("... (%d more bytes of diff left out)\n", len(s)-i-1)
}

// planProject is the project an assignment's release belongs to, for the render's fair
// share and its errors.
func planProject(a desired.Assignment) string {
	if a.Project == nil {
		return v1alpha1.ProjectPlatform
	}
	return v1alpha1.ProjectOrPlatform(a.Project.Name)
}

// planBudget is the budget a plan renders an assignment under: the one the agent would run
// it under, so that what the plan says renders is what renders.
func planBudget(b *v1alpha1.BudgetLimits) render.Budget {
	if b == nil {
		return render.DefaultBudget
	}
	return render.Budget{MemoryBytes: b.MemoryBytes, CPUTime: b.CPUTime, WallTime: b.WallTime, Objects: b.Objects, OutputBytes: b.OutputBytes}.
		WithDefaults(render.DefaultBudget)
}
