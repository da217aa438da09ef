package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// The converters below turn parsed YAML and JSON into the value types unstructured.Unstructured
// requires (map[string]any, []any, string, int64, float64, bool, nil); anything else makes its
// DeepCopy panic later, far from the file that caused it.
//
// YAML is read with YAML 1.2 rules, as kustomize reads it (so "yes" and "on" stay strings), and
// scalars that Kubernetes treats as text keep their original spelling: a timestamp or a !!binary
// value is passed on exactly as written, not reformatted.

// maxAliasExpansion bounds how many nodes alias expansion may add to a document, so that a
// "billion laughs" document fails instead of exhausting the agent's memory.
const maxAliasExpansion = 100_000

type yamlConverter struct {
	aliasBudget int
}

func newYAMLConverter() *yamlConverter { return &yamlConverter{aliasBudget: maxAliasExpansion} }

// value converts n. Errors carry the line they concern.
func (c *yamlConverter) value(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0])
	case yaml.AliasNode:
		c.aliasBudget -= countNodes(n.Alias, c.aliasBudget+1)
		if c.aliasBudget < 0 {
			return nil, lineError(n.Line, errors.New("too many alias expansions"))
		}
		return c.value(n.Alias)
	case yaml.MappingNode:
		return c.mapping(n)
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, item := range n.Content {
			v, err := c.value(item)
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		return s, nil
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, lineError(n.Line, fmt.Errorf("unexpected YAML node kind %d", n.Kind))
}

func (c *yamlConverter) mapping(n *yaml.Node) (map[string]any, error) {
	m := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key, err := mapKey(k)
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, lineError(k.Line, fmt.Errorf("mapping key %q already defined at line %d", key, firstKeyLine(n, key)))
		}
		val, err := c.value(v)
		if err != nil {
			return nil, err
		}
		m[key] = val
	}
	// "<<: *base" merges keys the mapping does not set itself; with several sources the first
	// one that sets a key wins (YAML merge key semantics).
	for _, src := range merges {
		if err := c.merge(m, src); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// firstKeyLine is the line where mapping n first sets key; only called to report a duplicate.
func firstKeyLine(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, err := mapKey(n.Content[i]); err == nil && k == key {
			return n.Content[i].Line
		}
	}
	return 0
}

func (c *yamlConverter) merge(into map[string]any, src *yaml.Node) error {
	for src.Kind == yaml.AliasNode {
		c.aliasBudget -= countNodes(src.Alias, c.aliasBudget+1)
		if c.aliasBudget < 0 {
			return lineError(src.Line, errors.New("too many alias expansions"))
		}
		src = src.Alias
	}
	switch src.Kind {
	case yaml.MappingNode:
		v, err := c.value(src)
		if err != nil {
			return err
		}
		for k, val := range v.(map[string]any) {
			if _, set := into[k]; !set {
				into[k] = val
			}
		}
		return nil
	case yaml.SequenceNode:
		for _, item := range src.Content {
			if err := c.merge(into, item); err != nil {
				return err
			}
		}
		return nil
	}
	return lineError(src.Line, errors.New("merge key value must be a mapping or a list of mappings"))
}

// mapKey turns a scalar key into a string the way sigs.k8s.io/yaml does (1: x has key "1").
func mapKey(k *yaml.Node) (string, error) {
	for k.Kind == yaml.AliasNode {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", lineError(k.Line, errors.New("mapping key must be a scalar"))
	}
	if k.ShortTag() == "!!null" {
		return "null", nil
	}
	return k.Value, nil
}

func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, lineError(n.Line, err)
		}
		return b, nil
	case "!!int":
		if i, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
			return i, nil
		}
		// Other spellings (0x1F, 0o17, 1_000, out of int64 range) follow the YAML library.
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, nil
		}
		return float(n)
	case "!!float":
		return float(n)
	default: // !!str, !!timestamp, !!binary and application tags keep their text.
		return n.Value, nil
	}
}

func float(n *yaml.Node) (any, error) {
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil {
		if err := n.Decode(&f); err != nil {
			return nil, lineError(n.Line, err)
		}
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, lineError(n.Line, fmt.Errorf("%s cannot be represented in JSON", n.Value))
	}
	return f, nil
}

// countNodes counts the nodes under n, stopping once limit is reached.
func countNodes(n *yaml.Node, limit int) int {
	count := 1
	for _, c := range n.Content {
		if count >= limit {
			break
		}
		count += countNodes(c, limit-count)
	}
	return count
}

// lineErr is an error at a known line of the file being decoded.
type lineErr struct {
	line int
	err  error
}

func (e *lineErr) Error() string { return e.err.Error() }
func (e *lineErr) Unwrap() error { return e.err }

func lineError(line int, err error) error { return &lineErr{line: line, err: err} }

// jsonValue converts a value decoded by encoding/json with UseNumber: whole numbers become
// int64 and the others float64, as apimachinery's JSON decoding does.
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
		return v, nil
	case []any:
		for i, e := range v {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			v[i] = c
		}
		return v, nil
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", v, err)
		}
		return f, nil
	}
	return v, nil
}
