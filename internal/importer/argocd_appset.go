package importer

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// paramSet is one set of generator parameters: literal values, and, from a cluster
// generator, the selector of the clusters it stands for (its cluster parameters become
// Flotilla path templates over the cluster).
type paramSet struct {
	vals    map[string]string
	cluster *v1alpha1.LabelSelector
}

// unresolved marks a parameter Flotilla cannot fill ({{server}}); the field it lands in is
// then reported instead of converted.
func unresolved(expr string) string { return "\x00" + expr + "\x00" }

// clusterName is the Flotilla template for a cluster generator's name parameter.
const clusterName = "{{ .Cluster.Name }}"

// applicationSet converts an ApplicationSet: each parameter set of its generators gives one
// Release, except that a cluster generator's clusters stay one Release that targets them.
func (a *argo) applicationSet(o *Object) {
	f := func(l Level, field, msg, do string) { a.find(o, l, field, msg, do) }
	goTpl, _ := o.boolean("spec.goTemplate")
	o.markUsed("spec.goTemplateOptions")
	tmpl := o.mapAt("spec.template")
	if tmpl == nil {
		f(LeftOut, "spec.template", "no template: not converted", "")
		return
	}
	var sets []paramSet
	for i, g := range o.list("spec.generators") {
		gm, _ := g.(map[string]any)
		sets = append(sets, a.generator(o, fmt.Sprintf("spec.generators[%d]", i), gm, goTpl, 0)...)
	}
	for _, k := range []struct{ field, msg, do string }{
		{"spec.strategy", "progressive sync: not converted", "give the release a spec.rollout with waves (docs/rollouts.md)"},
		{"spec.syncPolicy", "ApplicationSet sync policy (applicationsSync, preserveResourcesOnDeletion): not converted", "a Release removed from the fleet is pruned only with spec.prune"},
		{"spec.templatePatch", "template patch: not converted", "apply the patch to the imported releases by hand"},
		{"spec.ignoreApplicationDifferences", "not converted: Flotilla releases are not edited by hand", ""},
		{"spec.preservedFields", "not converted", ""},
	} {
		if o.has(k.field) {
			o.markUsed(k.field)
			f(LeftOut, k.field, k.msg, k.do)
		}
	}
	for _, field := range o.leftovers("spec") {
		f(LeftOut, field, "not converted: Flotilla has no equivalent", "see docs/import.md")
	}
	if len(sets) > a.opts.MaxGeneratedReleases {
		f(LeftOut, "spec.generators", fmt.Sprintf("the generators give %d applications, more than %d: not converted", len(sets), a.opts.MaxGeneratedReleases), "import a narrower ApplicationSet")
		return
	}
	for _, ps := range sets {
		m, _ := substituteAll(tmpl, ps, goTpl).(map[string]any)
		syn := &Object{File: o.File, Doc: o.Doc, APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, Namespace: o.Namespace, m: m, used: map[string]bool{}}
		name, _ := lookup(m, "metadata.name").(string)
		name = templateSpan.ReplaceAllString(strings.ReplaceAll(name, "\x00", ""), "")
		if sanitize(name, "") == "" {
			name = o.Name
		}
		if ps.cluster != nil {
			sel := "every cluster"
			if len(ps.cluster.MatchLabels) > 0 {
				sel = "clusters labelled " + formatLabels(ps.cluster.MatchLabels)
			}
			f(Action, "spec.generators", fmt.Sprintf("the cluster generator became targets: the release goes to %s; its name and labels parameters became .Cluster.Name and .Cluster.Labels", sel),
				"give the Flotilla clusters the labels their Argo CD cluster Secrets had")
		}
		a.app(syn, "spec.template.", name, &appContext{selector: ps.cluster})
	}
}

func formatLabels(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// generator expands one generator into parameter sets; what it cannot expand is reported
// and gives none.
func (a *argo) generator(o *Object, field string, g map[string]any, goTpl bool, depth int) []paramSet {
	f := func(l Level, fld, msg, do string) { a.find(o, l, fld, msg, do) }
	var out []paramSet
	for _, k := range sortedKeys(g) {
		v, _ := g[k].(map[string]any)
		gf := field + "." + k
		known := map[string][]string{
			"list":     {"elements", "elementsYaml"},
			"clusters": {"selector", "values"},
			"git":      {"repoURL", "revision", "directories", "files", "pathParamPrefix"},
			"matrix":   {"generators"},
		}
		if keys, ok := known[k]; ok {
			for _, sub := range sortedKeys(v) {
				if !slices.Contains(keys, sub) {
					f(LeftOut, gf+"."+sub, "not converted", "apply it to the imported releases by hand")
				}
			}
		}
		switch k {
		case "list":
			if _, ok := v["elementsYaml"]; ok {
				f(LeftOut, gf+".elementsYaml", "elementsYaml: not converted", "write the elements out as a list")
			}
			els, _ := v["elements"].([]any)
			for _, el := range els {
				vals := map[string]string{}
				flatten("", el, vals)
				out = append(out, paramSet{vals: vals})
			}
		case "clusters":
			sel := &v1alpha1.LabelSelector{}
			s, _ := v["selector"].(map[string]any)
			if _, ok := s["matchExpressions"]; ok {
				f(LeftOut, gf+".selector.matchExpressions", "matchExpressions: Flotilla targets select by matchLabels only; the generator was not converted (matching more clusters than Argo CD did would be worse)", "label the clusters it matches and select that label with matchLabels")
				continue
			}
			if ml, ok := s["matchLabels"].(map[string]any); ok {
				sel.MatchLabels = map[string]string{}
				for lk, lv := range ml {
					if lk == "argocd.argoproj.io/secret-type" {
						// Every Argo CD cluster Secret has it; no Flotilla cluster does.
						continue
					}
					sel.MatchLabels[lk] = fmt.Sprint(lv)
				}
			}
			if msg := labelsProblem(sel.MatchLabels); msg != "" {
				f(LeftOut, gf+".selector.matchLabels", msg+": not a Flotilla cluster label; the generator was not converted", "")
				continue
			}
			vals := map[string]string{}
			if vv, ok := v["values"].(map[string]any); ok {
				flatten("values", vv, vals)
				for vk, val := range vals {
					vals[vk] = substitute(val, paramSet{cluster: sel}, goTpl)
				}
			}
			out = append(out, paramSet{vals: vals, cluster: sel})
		case "git":
			out = append(out, a.gitGenerator(o, gf, v)...)
		case "matrix":
			kids, _ := v["generators"].([]any)
			if depth > 0 || len(kids) != 2 {
				f(LeftOut, gf, "a matrix of other than two generators, or nested in a matrix: not converted", "write the combinations out as list elements")
				continue
			}
			k0, _ := kids[0].(map[string]any)
			k1, _ := kids[1].(map[string]any)
			left := a.generator(o, gf+".generators[0]", k0, goTpl, depth+1)
			right := a.generator(o, gf+".generators[1]", k1, goTpl, depth+1)
			for _, l := range left {
				for _, r := range right {
					if l.cluster != nil && r.cluster != nil {
						f(LeftOut, gf, "a matrix of two cluster generators: not converted", "")
						return out
					}
					vals := maps.Clone(l.vals)
					if vals == nil {
						vals = map[string]string{}
					}
					maps.Copy(vals, r.vals)
					c := l.cluster
					if c == nil {
						c = r.cluster
					}
					out = append(out, paramSet{vals: vals, cluster: c})
				}
			}
		case "selector", "template", "values":
			f(LeftOut, gf, "a generator's "+k+": not converted", "apply it to the imported releases by hand")
		default:
			f(LeftOut, gf, fmt.Sprintf("the %s generator is not converted: Flotilla converts list, clusters, Git directory and matrix generators", k),
				"write what it generates out as a list generator and import again, or make the Releases by hand")
		}
	}
	return out
}

// gitGenerator expands a Git directory generator.
func (a *argo) gitGenerator(o *Object, field string, g map[string]any) []paramSet {
	f := func(l Level, fld, msg, do string) { a.find(o, l, fld, msg, do) }
	if _, ok := g["files"]; ok {
		f(LeftOut, field+".files", "the Git files generator is not converted", "write what the files hold out as list elements and import again")
		return nil
	}
	if p, _ := g["pathParamPrefix"].(string); p != "" {
		f(LeftOut, field+".pathParamPrefix", "pathParamPrefix: not converted", "")
		return nil
	}
	repo, _ := g["repoURL"].(string)
	dirs, _ := g["directories"].([]any)
	var include, exclude []string
	for _, d := range dirs {
		dm, _ := d.(map[string]any)
		p, _ := dm["path"].(string)
		p = strings.TrimPrefix(p, "/")
		if ex, _ := dm["exclude"].(bool); ex {
			exclude = append(exclude, p)
		} else if p != "" {
			include = append(include, p)
		}
	}
	glob := slices.ContainsFunc(include, func(p string) bool { return strings.ContainsAny(p, "*?[") })
	var found []string
	if !glob {
		found = include
	} else {
		root, ok := a.repoCheckout(repo)
		if !ok {
			f(LeftOut, field+".directories", fmt.Sprintf("directories of %s matching %s: the importer needs a checkout to list them", repo, strings.Join(include, ", ")),
				fmt.Sprintf("run again with --repo %s=DIR, DIR a checkout of the revision Argo CD reads", repo))
			return nil
		}
		for _, p := range include {
			matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil {
				f(LeftOut, field+".directories", fmt.Sprintf("pattern %q: %v", p, err), "")
				continue
			}
			for _, m := range matches {
				if st, err := os.Stat(m); err != nil || !st.IsDir() {
					continue
				}
				rel, err := filepath.Rel(root, m)
				if err != nil {
					continue
				}
				found = append(found, filepath.ToSlash(rel))
			}
		}
	}
	var out []paramSet
	slices.Sort(found)
	for _, p := range slices.Compact(found) {
		if slices.ContainsFunc(strings.Split(p, "/"), func(s string) bool { return strings.HasPrefix(s, ".") }) {
			continue
		}
		if slices.ContainsFunc(exclude, func(ex string) bool { ok, _ := path.Match(ex, p); return ok }) {
			continue
		}
		out = append(out, paramSet{vals: dirParams(p)})
	}
	if glob {
		f(Note, field+".directories", fmt.Sprintf("expanded in the checkout to %d directories; a directory added later needs a Release of its own", len(out)), "")
	}
	return out
}

func (a *argo) repoCheckout(repo string) (string, bool) {
	if d, ok := a.opts.Repos[repo]; ok {
		return d, true
	}
	norm, _ := normalRepoURL(repo)
	for k, d := range a.opts.Repos {
		if n, _ := normalRepoURL(k); n == norm {
			return d, true
		}
	}
	return "", false
}

var unsafeBasename = regexp.MustCompile(`[^a-zA-Z0-9-.]`)

// dirParams are the parameters of a Git directory generator for directory p.
func dirParams(p string) map[string]string {
	base := path.Base(p)
	vals := map[string]string{"path": p, "path.path": p, "path.basename": base, "path.basenameNormalized": unsafeBasename.ReplaceAllString(base, "-")}
	for i, s := range strings.Split(p, "/") {
		vals[fmt.Sprintf("path[%d]", i)] = s
		vals[fmt.Sprintf("path.segments[%d]", i)] = s
	}
	return vals
}

// flatten turns a generator element into dotted keys: {a: {b: c}} gives a.b=c.
func flatten(prefix string, v any, out map[string]string) {
	key := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			flatten(key(k), e, out)
		}
	case nil:
		out[prefix] = ""
	case string:
		out[prefix] = v
	case float64:
		out[prefix] = strconv.FormatFloat(v, 'f', -1, 64)
	default:
		out[prefix] = fmt.Sprint(v)
	}
}

var templateSpan = regexp.MustCompile(`\{\{.*?\}\}`)

// substituteAll substitutes every string of a template.
func substituteAll(v any, ps paramSet, goTpl bool) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = substituteAll(e, ps, goTpl)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = substituteAll(e, ps, goTpl)
		}
		return out
	case string:
		return substitute(v, ps, goTpl)
	}
	return v
}

// substitute replaces generator parameters in s: {{key}} (fasttemplate) or, with goTpl,
// {{ .key }} and {{ index .key N }}. A cluster parameter becomes a Flotilla path template; a
// parameter Flotilla cannot fill is marked with unresolved.
func substitute(s string, ps paramSet, goTpl bool) string {
	return templateSpan.ReplaceAllStringFunc(s, func(span string) string {
		expr := strings.TrimSpace(span[2 : len(span)-2])
		if goTpl {
			expr = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(expr, "-"), "-"))
			fields := strings.Fields(expr)
			switch {
			case len(fields) == 1 && strings.HasPrefix(expr, "."):
				expr = expr[1:]
			case len(fields) == 3 && fields[0] == "index" && strings.HasPrefix(fields[1], "."):
				if n, err := strconv.Atoi(fields[2]); err == nil {
					expr = fmt.Sprintf("%s[%d]", fields[1][1:], n)
				} else if q, err := strconv.Unquote(fields[2]); err == nil {
					expr = fields[1][1:] + "." + q
				} else {
					return unresolved(span)
				}
			default:
				return unresolved(span)
			}
		}
		if v, ok := ps.vals[expr]; ok {
			return v
		}
		if ps.cluster != nil {
			switch {
			case expr == "name" || expr == "nameNormalized":
				return clusterName
			case strings.HasPrefix(expr, "metadata.labels."):
				return fmt.Sprintf("{{ index .Cluster.Labels %q }}", strings.TrimPrefix(expr, "metadata.labels."))
			}
		}
		return unresolved(span)
	})
}
