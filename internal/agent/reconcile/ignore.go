package reconcile

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Ignore rules and respected managers name fields of an existing object that flotilla leaves
// as they are live: it sets them when it creates the object and never takes them back. An
// HPA's replicas, a caBundle cert-manager injects, what an operator writes.
//
// How a left-alone field leaves the apply decides who owns it afterwards (server-side apply):
//   - Flotilla does not own the live value (another manager wrote it): the field is removed
//     from what flotilla applies. Flotilla then declares nothing about it, so the apply never
//     conflicts with the owner, never needs force and cannot write a value it read a moment
//     before the owner changed it. Copying the live value in instead would make flotilla a
//     co-owner, and then a controller that applies the field without force would conflict
//     with flotilla.
//   - Flotilla owns it (nobody has changed it since flotilla set it): the live value is
//     copied into what flotilla applies. Removing it instead would make the API server delete
//     the field, since a field its only applier stops declaring is removed (a Deployment
//     would fall back to 1 replica). Copying keeps the value and flotilla's ownership, and
//     the next writer takes the field over as usual.
//
// A field absent live is applied as desired, so an object created fresh, or a field nobody
// has set yet, gets the desired value. Drift is computed after this, so a left-alone field
// is never reported as drift and never causes a write (Argo CD's apps that stay OutOfSync on
// ignored fields, argoproj/argo-cd#26588, are what this avoids).

// Bounds on ignore rules: the hub validates them, the agent holds to its own bounds too.
const (
	maxPointerBytes  = 1024
	maxPointerTokens = 64
	maxIgnorePaths   = 1000
	// maxRespectManagers and maxManagerName (the API server's own limit on a manager's
	// name) bound respectManagers.
	maxRespectManagers = 100
	maxManagerName     = 128
)

// scaleSubresource is the subresource an HPA (and kubectl scale) writes replicas through:
// fields written that way are always left alone.
const scaleSubresource = "scale"

// pointer is a parsed JSON pointer (RFC 6901): its reference tokens, unescaped.
type pointer []string

// parsePointer parses p: "/spec/replicas", "/metadata/annotations/example.com~1x" (~1 is
// "/", ~0 is "~"), "/spec/template/spec/containers/0/image" (list indexes are decimal).
func parsePointer(p string) (pointer, error) {
	switch {
	case p == "" || p == "/":
		return nil, errors.New(`names no field: point at one, such as "/spec/replicas"`)
	case len(p) > maxPointerBytes:
		return nil, fmt.Errorf("is %d bytes long, more than %d", len(p), maxPointerBytes)
	case p[0] != '/':
		return nil, errors.New(`is not a JSON pointer: it must start with "/", as in "/spec/replicas"`)
	}
	raw := strings.Split(p[1:], "/")
	if len(raw) > maxPointerTokens {
		return nil, fmt.Errorf("has %d parts, more than %d", len(raw), maxPointerTokens)
	}
	out := make(pointer, len(raw))
	for i, tok := range raw {
		for j := 0; j < len(tok); j++ {
			if tok[j] == '~' && (j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1')) {
				return nil, errors.New(`is not a JSON pointer: "~" must be followed by 0 or 1 (write "~0" for "~" and "~1" for "/" in a key)`)
			}
		}
		// ~1 first: "~01" is the key "~1", not "/".
		out[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
	}
	return out, nil
}

// String is p as a JSON pointer, escaped.
func (p pointer) String() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// within reports whether p is q or below it.
func (p pointer) within(q pointer) bool {
	if len(p) < len(q) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// identity: fields that name the object; never left out of an apply.
func (p pointer) identity() bool {
	switch {
	case len(p) == 1:
		return p[0] == "apiVersion" || p[0] == "kind" || p[0] == "metadata"
	case len(p) == 2 && p[0] == "metadata":
		return p[1] == "name" || p[1] == "namespace"
	}
	return false
}

// listIndex reads tok as an index into a list of n elements: decimal, without leading zeros.
func listIndex(tok string, n int) (int, bool) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i >= n {
		return 0, false
	}
	return i, true
}

// get returns the value at p in doc, and whether there is one.
func get(doc any, p pointer) (any, bool) {
	cur := doc
	for _, tok := range p {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, ok := listIndex(tok, len(c))
			if !ok {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// put sets the value at p in doc, creating maps on the way where doc has none. A list on the
// way must already hold the index. It reports whether it could.
func put(doc map[string]any, p pointer, v any) bool {
	var cur any = doc
	for i, tok := range p {
		last := i == len(p)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[tok] = v
				return true
			}
			next, ok := c[tok]
			if !ok || next == nil {
				if _, isIndex := listIndex(p[i+1], 1<<30); isIndex {
					return false // a list flotilla does not declare: nothing to put into
				}
				next = map[string]any{}
				c[tok] = next
			}
			cur = next
		case []any:
			j, ok := listIndex(tok, len(c))
			if !ok {
				return false
			}
			if last {
				c[j] = v
				return true
			}
			cur = c[j]
		default:
			return false
		}
	}
	return false
}

// drop removes the value at p from doc, if there is one.
func drop(doc map[string]any, p pointer) {
	parent, ok := get(doc, p[:len(p)-1])
	if m, isMap := parent.(map[string]any); ok && isMap {
		delete(m, p[len(p)-1])
	}
}

// ignoreRule is an IgnoreRule with its paths parsed.
type ignoreRule struct {
	IgnoreRule
	paths []pointer
}

func (r ignoreRule) matches(ref ObjectRef) bool {
	return (r.Group == "" || r.Group == ref.Group) && (r.Kind == "" || r.Kind == ref.Kind) &&
		(r.Name == "" || r.Name == ref.Name) && (r.Namespace == "" || r.Namespace == ref.Namespace)
}

// parseIgnoreRules parses the rules' paths; an error names the rule and the path.
func parseIgnoreRules(rules []IgnoreRule) ([]ignoreRule, error) {
	out := make([]ignoreRule, 0, len(rules))
	total := 0
	for i, r := range rules {
		total += len(r.Paths)
		if total > maxIgnorePaths {
			return nil, fmt.Errorf("ignore rules: more than %d paths", maxIgnorePaths)
		}
		pr := ignoreRule{IgnoreRule: r}
		for _, p := range r.Paths {
			ptr, err := parsePointer(p)
			if err != nil {
				return nil, fmt.Errorf("ignore rule %d: path %q %v", i+1, p, err)
			}
			pr.paths = append(pr.paths, ptr)
		}
		out = append(out, pr)
	}
	return out, nil
}

// checkRespectManagers bounds the globs, so that matching them against every manager of
// every object stays cheap.
func checkRespectManagers(globs []string) error {
	if len(globs) > maxRespectManagers {
		return fmt.Errorf("respectManagers: %d entries, more than %d", len(globs), maxRespectManagers)
	}
	for i, g := range globs {
		if g == "" || len(g) > maxManagerName {
			return fmt.Errorf("respectManagers entry %d is %d bytes long: a field manager's name has 1 to %d", i+1, len(g), maxManagerName)
		}
	}
	return nil
}

// fieldOwner is one path of a live object that one managedFields entry holds.
type fieldOwner struct {
	path        pointer
	fp          fieldpath.Path // the same path as managedFields name it, list elements by key
	manager     string
	subresource string
	// leaf: a value the manager wrote (a scalar, or a list or map it holds as a whole), not a
	// map or list it only holds open for its own entries.
	leaf bool
}

// ownersOf reads live's managedFields as paths of live, those of the entries want takes (nil:
// all). An entry that cannot be read, or a path that does not resolve in live, owns nothing
// that can be named.
func ownersOf(live *unstructured.Unstructured, want func(metav1.ManagedFieldsEntry) bool) []fieldOwner {
	var out []fieldOwner
	for _, mf := range live.GetManagedFields() {
		if mf.FieldsV1 == nil || (want != nil && !want(mf)) {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
			continue
		}
		leaves := set.Leaves()
		set.Iterate(func(p fieldpath.Path) {
			if ptr, ok := resolve(live.Object, p); ok {
				out = append(out, fieldOwner{path: ptr, fp: slices.Clone(p), manager: mf.Manager, subresource: mf.Subresource, leaf: leaves.Has(p)})
			}
		})
	}
	return out
}

// resolve turns a managedFields path into a JSON pointer into doc: list elements named by
// their keys (k:{"name":"web"}) or value (v:"x") become the index they have in doc.
func resolve(doc any, p fieldpath.Path) (pointer, bool) {
	out := make(pointer, 0, len(p))
	cur := doc
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return nil, false
			}
			out = append(out, *pe.FieldName)
		default:
			l, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			i := elementIndex(l, pe)
			if i < 0 {
				return nil, false
			}
			cur = l[i]
			out = append(out, strconv.Itoa(i))
		}
	}
	return out, true
}

// elementIndex is the index of the element of l that pe names, or -1.
func elementIndex(l []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index >= 0 && *pe.Index < len(l) {
			return *pe.Index
		}
	case pe.Value != nil:
		want := (*pe.Value).Unstructured()
		for i, e := range l {
			if sameValue(e, want) {
				return i
			}
		}
	case pe.Key != nil:
	elements:
		for i, e := range l {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			for _, f := range *pe.Key {
				if !sameValue(m[f.Name], f.Value.Unstructured()) {
					continue elements
				}
			}
			return i
		}
	}
	return -1
}

func sameValue(a, b any) bool {
	return coveredBy(a, b, false) && coveredBy(b, a, false)
}

// respected reports whether manager matches one of the globs ("*" is any run of characters,
// "?" any one).
func respected(manager string, globs []string) bool {
	for _, g := range globs {
		if glob(g, manager) {
			return true
		}
	}
	return false
}

func glob(pattern, s string) bool {
	// Iterative matching with one backtrack point: linear in practice, never exponential.
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p, i = p+1, i+1
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			mark++
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// keptPath is one path of an existing object that flotilla leaves as it is live.
type keptPath struct {
	live pointer
	// fp is set for a path read from managedFields: list elements by key, so that the same
	// element is found in the desired state whatever its position there.
	fp fieldpath.Path
}

// leftAlone lists the paths of live that flotilla leaves as they are: those of the ignore
// rules that match the object, and the values written by respected managers or through the
// scale subresource. owners is nil unless it had to be read (it parses managedFields).
func leftAlone(ref ObjectRef, live *unstructured.Unstructured, rules []ignoreRule, respect []string) (paths []keptPath, owners []fieldOwner) {
	for _, r := range rules {
		if r.matches(ref) {
			for _, p := range r.paths {
				paths = append(paths, keptPath{live: p})
			}
		}
	}
	kept := func(mf metav1.ManagedFieldsEntry) bool {
		return mf.Manager != FieldManager && (mf.Subresource == scaleSubresource || (mf.Subresource == "" && respected(mf.Manager, respect)))
	}
	needOwners := len(paths) > 0
	for _, mf := range live.GetManagedFields() {
		needOwners = needOwners || kept(mf)
	}
	if !needOwners {
		return nil, nil
	}
	// Only flotilla's own entry (heldByFlotilla) and the kept ones are read: not the large
	// status entries of controllers, nor anyone else's.
	owners = ownersOf(live, func(mf metav1.ManagedFieldsEntry) bool {
		return kept(mf) || (mf.Manager == FieldManager && mf.Subresource == "")
	})
	for _, o := range owners {
		if o.leaf && o.manager != FieldManager && !isKeyField(o.fp) &&
			(o.subresource == scaleSubresource || (o.subresource == "" && respected(o.manager, respect))) {
			paths = append(paths, keptPath{live: o.path, fp: o.fp})
		}
	}
	return paths, owners
}

// isKeyField: the path names a key field of a list element (the name of a container), which
// says which element it is; it is never left out of the element.
func isKeyField(fp fieldpath.Path) bool {
	if len(fp) < 2 || fp[len(fp)-1].FieldName == nil || fp[len(fp)-2].Key == nil {
		return false
	}
	for _, f := range *fp[len(fp)-2].Key {
		if f.Name == *fp[len(fp)-1].FieldName {
			return true
		}
	}
	return false
}

// inDesired is where a kept path is in the desired state: the same pointer for an ignore
// rule's path (list indexes are positions, as the rule wrote them); for a path from
// managedFields, list elements found by their key or value. False when the desired state has
// no such list element.
func (k keptPath) inDesired(desired map[string]any) (pointer, bool) {
	if k.fp == nil {
		return k.live, true
	}
	out := make(pointer, 0, len(k.fp))
	var cur any = desired
	for _, pe := range k.fp {
		if pe.FieldName != nil {
			out = append(out, *pe.FieldName)
			m, _ := cur.(map[string]any)
			cur = m[*pe.FieldName] // nil when absent: put creates the maps
			continue
		}
		l, ok := cur.([]any)
		if !ok {
			return nil, false
		}
		i := elementIndex(l, pe)
		if i < 0 {
			return nil, false
		}
		out, cur = append(out, strconv.Itoa(i)), l[i]
	}
	return out, true
}

// leaveAlone makes each existing object's desired state keep the live values of the fields
// flotilla leaves alone (see the top of this file for why some are removed and some copied).
// The hash recorded in the inventory stays that of the desired state as written, so a
// change of it is still a new revision and a change of live values is still drift.
func leaveAlone(items []*item, rules []ignoreRule, respect []string) {
	for _, it := range items {
		if it.live == nil {
			continue
		}
		paths, owners := leftAlone(it.ref, it.live, rules, respect)
		for _, k := range paths {
			if k.live.identity() {
				continue
			}
			v, ok := get(it.live.Object, k.live)
			if !ok {
				continue // absent live: applied as desired
			}
			at, ok := k.inDesired(it.desired.Object)
			if !ok {
				continue // a list element the desired state does not declare: nothing to keep
			}
			parent, _ := get(it.live.Object, k.live[:len(k.live)-1])
			_, inList := parent.([]any)
			if inList || heldByFlotilla(owners, k.live) {
				// An element of a list cannot be left out without moving the others.
				put(it.desired.Object, at, runtime.DeepCopyJSONValue(v))
			} else {
				drop(it.desired.Object, at)
			}
		}
	}
}

// heldByFlotilla reports whether flotilla's apply owns p, a field below it, or a list or map
// around it that it holds as a whole.
func heldByFlotilla(owners []fieldOwner, p pointer) bool {
	for _, o := range owners {
		if o.manager != FieldManager || o.subresource != "" {
			continue
		}
		if o.path.within(p) || (o.leaf && p.within(o.path)) {
			return true
		}
	}
	return false
}

// nameManagers fills in, for each drifted field, the field manager that wrote its live
// value: the manager owning the field itself, or the list or map around it that it holds
// as a whole. Several managers sharing a value are listed by name, comma-separated.
func nameManagers(fields []FieldDrift, live *unstructured.Unstructured) {
	if len(fields) == 0 || live == nil {
		return
	}
	owners := ownersOf(live, nil)
	for i := range fields {
		p, err := pathPointer(fields[i].Path)
		if err != nil || fields[i].Live == "" {
			continue // absent live: nobody wrote a value
		}
		fields[i].Manager = managerOf(owners, p)
	}
}

func managerOf(owners []fieldOwner, p pointer) string {
	var exact, around []string
	aroundLen := -1
	for _, o := range owners {
		switch {
		case len(o.path) == len(p) && p.within(o.path):
			exact = append(exact, o.manager)
		case o.leaf && p.within(o.path) && len(o.path) >= aroundLen:
			if len(o.path) > aroundLen {
				around, aroundLen = nil, len(o.path)
			}
			around = append(around, o.manager)
		}
	}
	names := exact
	if len(names) == 0 {
		names = around
	}
	return strings.Join(dedupe(names), ", ")
}

// DriftPointer turns a drift path as reports show it (.spec.replicas,
// .spec.template.spec.containers[0].image, .metadata.annotations["example.com/x"]) into
// the JSON pointer an ignore rule takes (/spec/replicas,
// /spec/template/spec/containers/0/image, /metadata/annotations/example.com~1x).
func DriftPointer(path string) (string, error) {
	p, err := pathPointer(path)
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

func pathPointer(path string) (pointer, error) {
	if path == "" || path == DeletedPath {
		return nil, fmt.Errorf("%q names no field", path)
	}
	var out pointer
	for i := 0; i < len(path); {
		switch path[i] {
		case '.':
			j := i + 1
			for j < len(path) && path[j] != '.' && path[j] != '[' {
				j++
			}
			if j == i+1 {
				return nil, fmt.Errorf("%q: empty key at byte %d", path, i)
			}
			out, i = append(out, path[i+1:j]), j
		case '[':
			end := strings.IndexByte(path[i:], ']')
			if i+1 < len(path) && path[i+1] == '"' {
				q, err := strconv.QuotedPrefix(path[i+1:])
				if err != nil {
					return nil, fmt.Errorf("%q: bad quoted key at byte %d", path, i)
				}
				key, _ := strconv.Unquote(q)
				end = 1 + len(q)
				if i+end >= len(path) || path[i+end] != ']' {
					return nil, fmt.Errorf("%q: no ] after the key at byte %d", path, i)
				}
				out = append(out, key)
			} else {
				if end < 0 {
					return nil, fmt.Errorf("%q: no ] after byte %d", path, i)
				}
				if _, ok := listIndex(path[i+1:i+end], 1<<30); !ok {
					return nil, fmt.Errorf("%q: %q is not a list index", path, path[i+1:i+end])
				}
				out = append(out, path[i+1:i+end])
			}
			i += end + 1
		default:
			return nil, fmt.Errorf("%q: unexpected %q at byte %d", path, path[i], i)
		}
		if len(out) > maxPointerTokens {
			return nil, fmt.Errorf("%q has more than %d parts", path, maxPointerTokens)
		}
	}
	return out, nil
}
