package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// object is a rendered object and where it came from, for error messages.
type object struct {
	u    *unstructured.Unstructured
	file string // relative to the root, slash-separated
	line int    // where the object starts in file; 0 when unknown (kustomize output)

	// substitute is set when the object contains "${" or "$$", so substitution may change it.
	substitute bool
	// node is the object as parsed, kept only when substitute is set: substitution works on
	// YAML text, and whether "${port}" stays a string or becomes a number depends on whether it
	// was quoted, which only the node remembers. Nil for JSON input, whose strings are all quoted.
	node *yaml.Node
	// sites and lazyNode replace node for an object decodeYAMLFast read: where its strings
	// with variables are and how yaml.v3 would write them, and its node, parsed only if
	// substitution needs the round trip after all.
	sites    []site
	lazyNode func() *yaml.Node
}

// localConfigAnnotation marks objects kustomize leaves out of its output; plain directories
// honour it too, so that moving files under a kustomization does not change what is applied.
const localConfigAnnotation = "config.kubernetes.io/local-config"

// decodeFile appends the objects in one manifest file to objs. The file is parsed once, as a
// stream of documents.
func decodeFile(rel string, data []byte, objs []object) ([]object, error) {
	if strings.EqualFold(path.Ext(rel), ".json") {
		return decodeJSON(rel, data, objs)
	}
	if out, ok := decodeYAMLFast(rel, data, objs); ok {
		return out, nil
	}
	return decodeYAML(rel, data, objs)
}

func decodeYAML(rel string, data []byte, objs []object) ([]object, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		var n yaml.Node
		if err := dec.Decode(&n); err == io.EOF {
			return objs, nil
		} else if err != nil {
			return nil, yamlError(rel, err)
		}
		v, err := newYAMLConverter().value(&n)
		if err != nil {
			return nil, yamlError(rel, err)
		}
		line := n.Line
		if len(n.Content) > 0 {
			line = n.Content[0].Line
		}
		if objs, err = appendObjects(objs, rel, line, doc, v, &n); err != nil {
			return nil, err
		}
	}
}

func decodeJSON(rel string, data []byte, objs []object) ([]object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for doc := 1; ; doc++ {
		start := int(dec.InputOffset())
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return objs, nil
		} else if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, &Error{File: rel, Line: lineAt(data, int(se.Offset)), Err: fmt.Errorf("json: %w", err)}
			}
			return nil, &Error{File: rel, Err: fmt.Errorf("json: %w", err)}
		}
		v, err := jsonValue(v)
		if err != nil {
			return nil, &Error{File: rel, Line: lineAt(data, start), Err: fmt.Errorf("json: %w", err)}
		}
		if objs, err = appendObjects(objs, rel, lineAt(data, skipSpace(data, start)), doc, v, nil); err != nil {
			return nil, err
		}
	}
}

// appendObjects checks document number doc of file rel, parsed as v (from node n, nil for JSON),
// and appends the objects it holds, expanding a List (any kind ending in "List" that has items,
// as kustomize does).
func appendObjects(objs []object, rel string, line, doc int, v any, n *yaml.Node) ([]object, error) {
	if v == nil {
		return objs, nil // empty document
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{File: rel, Line: line, Err: fmt.Errorf("document %d: want a Kubernetes object, got %s", doc, describe(v))}
	}
	kind, _ := m["kind"].(string)
	if items, isList := m["items"]; isList && strings.HasSuffix(kind, "List") {
		if items == nil {
			return objs, nil
		}
		list, ok := items.([]any)
		if !ok {
			return nil, &Error{File: rel, Line: line, Err: fmt.Errorf("document %d: %s items: want a list, got %s", doc, kind, describe(items))}
		}
		for i, item := range list {
			im, ok := item.(map[string]any)
			if !ok {
				return nil, &Error{File: rel, Line: line, Err: fmt.Errorf("document %d, item %d: want a Kubernetes object, got %s", doc, i+1, describe(item))}
			}
			if err := checkObject(im); err != nil {
				return nil, &Error{File: rel, Line: line, Err: fmt.Errorf("document %d, item %d: %w", doc, i+1, err)}
			}
			objs = appendUnlessLocal(objs, im, rel, line, func() *yaml.Node { return listItemNode(n, i) })
		}
		return objs, nil
	}
	if err := checkObject(m); err != nil {
		return nil, &Error{File: rel, Line: line, Err: fmt.Errorf("document %d: %w", doc, err)}
	}
	return appendUnlessLocal(objs, m, rel, line, func() *yaml.Node { return n }), nil
}

// appendUnlessLocal appends the object m unless it is local configuration. node returns the
// node m was converted from (nil for JSON); it is only called for objects that keep it.
func appendUnlessLocal(objs []object, m map[string]any, rel string, line int, node func() *yaml.Node) []object {
	u := &unstructured.Unstructured{Object: m}
	if v, ok := u.GetAnnotations()[localConfigAnnotation]; ok && v != "false" {
		return objs
	}
	o := object{u: u, file: rel, line: line, substitute: mayChange(m)}
	if o.substitute {
		o.node = node()
	}
	return append(objs, o)
}

// listItemNode returns the node of item i of the List in document node n, or nil.
func listItemNode(n *yaml.Node, i int) *yaml.Node {
	n = resolveNode(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for k := 0; k+1 < len(n.Content); k += 2 {
		if n.Content[k].Value == "items" {
			items := resolveNode(n.Content[k+1])
			if items.Kind == yaml.SequenceNode && i < len(items.Content) {
				// An item may refer to an anchor set in another item; on its own it would not
				// parse again after substitution.
				return expandAliases(items.Content[i])
			}
		}
	}
	return nil
}

// expandAliases returns a copy of n with aliases replaced by copies of what they refer to. It
// is only used on nodes the converter has already expanded within its alias budget.
func expandAliases(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return expandAliases(n.Alias)
	}
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, e := range n.Content {
		c.Content[i] = expandAliases(e)
	}
	return &c
}

// resolveNode looks through document and alias nodes.
func resolveNode(n *yaml.Node) *yaml.Node {
	for n != nil {
		switch {
		case n.Kind == yaml.DocumentNode && len(n.Content) > 0:
			n = n.Content[0]
		case n.Kind == yaml.AliasNode:
			n = n.Alias
		default:
			return n
		}
	}
	return nil
}

// checkObject requires what applying an object needs to identify it.
func checkObject(m map[string]any) error {
	var missing []string
	if s, _ := m["apiVersion"].(string); s == "" {
		missing = append(missing, "apiVersion")
	}
	if s, _ := m["kind"].(string); s == "" {
		missing = append(missing, "kind")
	}
	md, _ := m["metadata"].(map[string]any)
	if s, _ := md["name"].(string); s == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return nil
}

func describe(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case string:
		return "a string"
	}
	return fmt.Sprintf("%T", v)
}

// yamlLine matches the position the YAML library puts in its error messages.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlError turns a YAML error into an *Error whose Line is the line the parser reported, with
// the position moved out of the message so it is not repeated.
func yamlError(rel string, err error) error {
	var le *lineErr
	if errors.As(err, &le) {
		return &Error{File: rel, Line: le.line, Err: fmt.Errorf("yaml: %w", le.err)}
	}
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: rel, Line: line, Err: errors.New("yaml: " + msg[len(m[0]):])}
	}
	return &Error{File: rel, Err: err}
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int) int {
	off = min(off, len(data))
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

func skipSpace(data []byte, off int) int {
	for off < len(data) && (data[off] == ' ' || data[off] == '\t' || data[off] == '\n' || data[off] == '\r') {
		off++
	}
	return off
}
