package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// SubstituteAnnotation, set to "disabled" as an annotation or label, leaves an object's text
// untouched by variable substitution (Flux's kustomize.toolkit.fluxcd.io/substitute, renamed).
const SubstituteAnnotation = "flotilla.dev/substitute"

// substituteAll runs variable substitution on every object that could change, in place.
//
// It follows Flux's postBuild.substitute: the object is serialised to YAML as it was written,
// envsubst runs on that text in strict mode, and the result is parsed again. That round trip
// costs most of a render, so it is only taken where the outcome depends on it: most objects
// are substituted string by string on their decoded values (substitute_values.go), which gives the same
// object (a differential test and fuzz target hold the two to that). So "replicas: ${n}"
// becomes a number when n is one, while a quoted "${n}" stays a string (and every string of a
// JSON file stays a string). Only ${...} forms and the "$$" escape are touched; $var is left
// alone. Comments are dropped before substitution: they are not part of the object.
// Unlike Flux, substitution also runs when no variables are given: an object that refers to a
// variable then fails to render instead of reaching the cluster with "${name}" in it.
//
// exp bounds the bytes the substituted values add up to (nil: no bound): past it the render
// fails with errExpansion, before that much memory is spent.
func substituteAll(ctx context.Context, objs []object, vars map[string]string, exp *expansion) error {
	for i := range objs {
		o := &objs[i]
		// Most objects have nothing to substitute (o.substitute was set while decoding, with a
		// scan of their strings); they must not cost a serialisation, since a large artifact
		// has thousands of them.
		if !o.substitute || substituteDisabled(o) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := substituteObject(o, vars, exp); err != nil {
			return err
		}
	}
	return nil
}

func substituteDisabled(o *object) bool {
	return o.u.GetAnnotations()[SubstituteAnnotation] == "disabled" ||
		o.u.GetLabels()[SubstituteAnnotation] == "disabled"
}

// substituteObject substitutes o's variables: on its decoded values when the result is sure to
// be what the YAML round trip gives (substituteDecoded, the common case), else through that
// round trip (substituteText).
func substituteObject(o *object, vars map[string]string, exp *expansion) error {
	if done, err := substituteDecoded(o, vars, exp); done {
		return err
	}
	return substituteText(o, vars, exp)
}

// substituteText is substitution as Flux does it: on the object's YAML text, parsed again.
func substituteText(o *object, vars map[string]string, exp *expansion) error {
	name := objectName(o.u.GetKind(), o.u.GetNamespace(), o.u.GetName())
	fail := func(err error) error { return &Error{File: o.file, Line: o.line, Object: name, Err: err} }

	n := o.node
	switch {
	case n == nil && o.lazyNode != nil:
		if n = o.lazyNode(); n == nil {
			return fail(errors.New("substitution: the document does not parse again")) // never: it parsed once
		}
	case n == nil:
		n = quotedNode(o.u.Object)
	}
	stripComments(n)
	text, err := yaml.Marshal(n)
	if err != nil {
		return fail(fmt.Errorf("substitution: %w", err))
	}
	out, err := evalStrict(string(text), vars, exp)
	if err != nil {
		return fail(err)
	}
	if out == string(text) {
		return nil
	}
	v, err := decodeSubstituted(out)
	if err != nil {
		return fail(fmt.Errorf("after substitution: %w", err))
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fail(fmt.Errorf("after substitution: want a Kubernetes object, got %s", describe(v)))
	}
	if err := checkObject(m); err != nil {
		return fail(fmt.Errorf("after substitution: %w", err))
	}
	o.u.Object = m
	o.node, o.sites, o.lazyNode = nil, nil, nil
	return nil
}

func decodeSubstituted(text string) (any, error) {
	var n yaml.Node
	if err := yaml.NewDecoder(strings.NewReader(text)).Decode(&n); err != nil && err != io.EOF {
		return nil, err
	}
	return newYAMLConverter().value(&n)
}

// mayChange reports whether substitution could change v: envsubst only rewrites "${" and "$$".
func mayChange(v any) bool {
	switch v := v.(type) {
	case string:
		return hasDollarSyntax(v)
	case map[string]any:
		for k, e := range v {
			if hasDollarSyntax(k) || mayChange(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if mayChange(e) {
				return true
			}
		}
	}
	return false
}

func hasDollarSyntax(s string) bool {
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i+1 >= len(s) {
			return false
		}
		if s[i+1] == '{' || s[i+1] == '$' {
			return true
		}
		s = s[i+1:]
	}
}

// quotedNode builds the YAML node of a value that has no node of its own (it came from JSON),
// with every string double-quoted, as kustomize keeps the strings of a JSON file.
func quotedNode(v any) *yaml.Node {
	switch v := v.(type) {
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			n.Content = append(n.Content, quotedNode(k), quotedNode(v[k]))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range v {
			n.Content = append(n.Content, quotedNode(e))
		}
		return n
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: v}
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v, 10)}
	case float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(v, 'g', -1, 64)}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}

// stripComments removes comments, which envsubst would otherwise read (and, for an undefined
// variable in a comment, fail on).
func stripComments(n *yaml.Node) {
	if n == nil {
		return
	}
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		stripComments(c)
	}
}
