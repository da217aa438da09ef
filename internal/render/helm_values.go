package render

import (
	"fmt"

	"github.com/fluxcd/pkg/envsubst"
	yaml "go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/strvals"
	sigsyaml "sigs.k8s.io/yaml"
)

// chartValues merges the values as `helm template -f FILE... --set EXPR...` does: each values
// file (then Values, as one more file) parsed as Helm parses it and merged over the ones
// before (maps key by key, anything else replaced), then each --set expression applied with
// Helm's strvals. Variables are substituted in the text of the values files and of Values
// before they are parsed (see substituteValues); never in --set, and never in the chart.
func chartValues(h Helm, vars map[string]string, lim helmLimits) (map[string]any, error) {
	docs := make([]ValuesFile, 0, len(h.ValuesFiles)+1)
	docs = append(docs, h.ValuesFiles...)
	if len(h.Values) > 0 {
		docs = append(docs, ValuesFile{Data: h.Values})
	}
	var size int64
	for _, s := range h.Set {
		size += int64(len(s))
	}
	for _, d := range docs {
		size += int64(len(d.Data))
	}
	tooLarge := func(size int64) error {
		return &Error{Err: fmt.Errorf("helm values are %d bytes, more than the %d allowed", size, lim.valuesBytes)}
	}
	if size > lim.valuesBytes {
		return nil, tooLarge(size)
	}
	base := map[string]any{}
	for _, d := range docs {
		name := d.Name
		fail := func(err error) error { return &Error{File: name, Err: err} }
		if name == "" {
			name = "values"
			fail = func(err error) error { return &Error{Err: fmt.Errorf("helm values: %w", err)} }
		}
		text, err := substituteValues(d.Data, vars)
		if err != nil {
			return nil, fail(err)
		}
		size += int64(len(text) - len(d.Data))
		if size > lim.valuesBytes {
			return nil, tooLarge(size)
		}
		current := map[string]any{}
		if err := sigsyaml.Unmarshal(text, &current); err != nil {
			return nil, fail(fmt.Errorf("failed to parse %s: %w", name, err))
		}
		base = mergeValues(base, current)
	}
	for _, s := range h.Set {
		if err := strvals.ParseInto(s, base); err != nil {
			return nil, &Error{Err: fmt.Errorf("--set %q: %w", s, err)}
		}
	}
	return base, nil
}

// mergeValues is Helm's merge of one values file over the ones before it (pkg/cli/values).
func mergeValues(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if v, ok := v.(map[string]any); ok {
			if bv, ok := out[k]; ok {
				if bv, ok := bv.(map[string]any); ok {
					out[k] = mergeValues(bv, v)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}

// substituteValues substitutes variables in a values document with the semantics the renderer
// uses for objects (substitute.go): Flux's envsubst in strict mode on the document's YAML
// text, comments removed first, so that "replicas: ${n}" gives a number when n is one and
// "${n}" quoted stays a string. A document without "${" or "$$" outside its comments is
// returned as it is, byte for byte, so that it parses exactly as `helm -f` parses it.
func substituteValues(data []byte, vars map[string]string) ([]byte, error) {
	if !hasDollarSyntax(string(data)) {
		return data, nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("yaml: %w", err)
	}
	stripComments(&n)
	if n.Kind == 0 {
		return data, nil // only comments
	}
	text, err := yaml.Marshal(&n)
	if err != nil {
		return nil, fmt.Errorf("substitution: %w", err)
	}
	if !hasDollarSyntax(string(text)) {
		return data, nil
	}
	out, err := evalStrict(string(text), vars, nil) // bounded by the values' own bound, after
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// evalStrict runs envsubst in strict mode, naming the variable that is not set. The values
// it substitutes are counted against exp: past it, the rest are substituted empty (so the
// text stops growing) and the result is errExpansion.
func evalStrict(text string, vars map[string]string, exp *expansion) (string, error) {
	// envsubst stops at the first variable that is not set and does not say which one, so
	// remember the last lookup that failed: lookups for ${x:=default} fail without stopping it.
	var missing string
	over := false
	out, err := envsubst.Eval(text, func(k string) (string, bool) {
		v, ok := vars[k]
		if !ok {
			missing = k
		}
		if ok && (over || !exp.take(len(v))) {
			over = true
			return "", true
		}
		return v, ok
	})
	if over {
		return "", errExpansion
	}
	if err != nil {
		if missing != "" {
			return "", fmt.Errorf("%w %q (set it, or give a default with ${%s:=value})", ErrUndefinedVariable, missing, missing)
		}
		return "", fmt.Errorf("substitution: %w", err)
	}
	return out, nil
}
