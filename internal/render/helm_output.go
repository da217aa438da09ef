package render

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// chartOutput turns what Helm rendered into objects.
//
// Documents are parsed as Helm and kubectl parse them when they apply (sigs.k8s.io/yaml, YAML
// 1.1: an unquoted yes is true), not with the YAML 1.2 rules of plain directories, so that the
// agent applies what `helm template | kubectl apply -f -` and `helm install` would.
type chartOutput struct {
	rel   string // the chart's directory relative to the root
	chart string // the chart's name: the first element of Helm's "# Source:" paths
}

// sourcePrefix is the comment Helm puts at the top of each document it renders.
const sourcePrefix = "# Source: "

// manifestObjects parses a release's manifest: its CRDs (when included), then its manifests in
// Helm's install order, each document headed by "# Source: chart/templates/file.yaml". It is
// split as kubectl splits `helm template`'s output, at "---" lines, each document keeping its
// final line break: a block scalar at the end of a document ("|") keeps its last newline.
//
// A CRD that comes twice, identical, is kept once: a subchart used under two aliases brings its
// crds/ twice; `helm template` prints both, and `helm install` creates the first and skips the
// second as existing. Any other duplicate is left for the reconciler to refuse.
func (c chartOutput) manifestObjects(manifest string) ([]object, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var objs []object
	source := ""
	for {
		chunk, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &Error{File: c.rel, Err: fmt.Errorf("rendered output: %w", err)}
		}
		doc := string(chunk)
		// A CRD file with several documents has the comment on its first one only.
		if s, ok := sourceOf(doc); ok {
			source = s
		}
		if objs, err = c.appendDoc(objs, source, doc); err != nil {
			return nil, err
		}
	}
	return dropDuplicateCRDs(objs), nil
}

// sourceOf returns the path in the "# Source:" comment that heads a document (after the
// "---" that the first document keeps), if it has one.
func sourceOf(doc string) (string, bool) {
	for line := range strings.Lines(doc) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "---"):
			continue
		case strings.HasPrefix(line, sourcePrefix):
			return strings.TrimSpace(strings.TrimPrefix(line, sourcePrefix)), true
		}
		return "", false
	}
	return "", false
}

func dropDuplicateCRDs(objs []object) []object {
	var seen map[string]*unstructured.Unstructured
	out := objs[:0]
	for _, o := range objs {
		if o.u.GetKind() == "CustomResourceDefinition" && strings.HasPrefix(o.u.GetAPIVersion(), "apiextensions.k8s.io/") {
			if prev, ok := seen[o.u.GetName()]; ok && equality.Semantic.DeepEqual(prev.Object, o.u.Object) {
				continue
			}
			if seen == nil {
				seen = map[string]*unstructured.Unstructured{}
			}
			seen[o.u.GetName()] = o.u
		}
		out = append(out, o)
	}
	return out
}

// hookObjects parses a release's hooks, test hooks left out (as --skip-tests does), pre-* hooks
// before post-* ones, each group by weight then kind and name: the order in which Helm runs them.
func (c chartOutput) hookObjects(hooks []*release.Hook) ([]object, error) {
	kept := make([]*release.Hook, 0, len(hooks))
	for _, h := range hooks {
		if !slices.Contains(h.Events, release.HookTest) {
			kept = append(kept, h)
		}
	}
	slices.SortStableFunc(kept, func(a, b *release.Hook) int {
		return cmp.Or(cmp.Compare(hookPhase(a), hookPhase(b)), cmp.Compare(a.Weight, b.Weight),
			strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
	})
	var objs []object
	for _, h := range kept {
		var err error
		// As `helm template` prints it: Helm trimmed the document, the line break is back.
		if objs, err = c.appendDoc(objs, h.Path, h.Manifest+"\n"); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// hookPhase is 0 for a hook that runs before the release's objects (any pre-* event), 1 for
// one that runs after.
func hookPhase(h *release.Hook) int {
	for _, e := range h.Events {
		if strings.HasPrefix(string(e), "pre-") {
			return 0
		}
	}
	return 1
}

// file is where a document from Helm's source path came from, relative to the root:
// "podinfo/templates/x.yaml" of the chart in charts/podinfo is charts/podinfo/templates/x.yaml.
func (c chartOutput) file(source string) string {
	if source == "" {
		return c.rel
	}
	_, inChart, ok := strings.Cut(source, "/")
	if !ok {
		return c.rel
	}
	return joinRel(c.rel, inChart)
}

// appendDoc appends the objects of one rendered document: none for an empty one, the items of
// a List, or the object. Each needs apiVersion, kind and metadata.name, as in a plain directory.
func (c chartOutput) appendDoc(objs []object, source, doc string) ([]object, error) {
	file := c.file(source)
	data, err := sigsyaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, &Error{File: file, Err: fmt.Errorf("rendered YAML: %w", err)}
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return objs, nil // empty, or only comments
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &Error{File: file, Err: fmt.Errorf("rendered YAML: %w", err)}
	}
	if v, err = jsonValue(v); err != nil {
		return nil, &Error{File: file, Err: fmt.Errorf("rendered YAML: %w", err)}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{File: file, Err: fmt.Errorf("rendered document: want a Kubernetes object, got %s", describe(v))}
	}
	kind, _ := m["kind"].(string)
	if items, isList := m["items"]; isList && strings.HasSuffix(kind, "List") {
		list, ok := items.([]any)
		if !ok && items != nil {
			return nil, &Error{File: file, Err: fmt.Errorf("rendered %s: items: want a list, got %s", kind, describe(items))}
		}
		for i, item := range list {
			im, ok := item.(map[string]any)
			if !ok {
				return nil, &Error{File: file, Err: fmt.Errorf("rendered %s, item %d: want a Kubernetes object, got %s", kind, i+1, describe(item))}
			}
			if err := checkObject(im); err != nil {
				return nil, &Error{File: file, Err: fmt.Errorf("rendered %s, item %d: %w", kind, i+1, err)}
			}
			objs = append(objs, object{u: &unstructured.Unstructured{Object: im}, file: file})
		}
		return objs, nil
	}
	if err := checkObject(m); err != nil {
		return nil, &Error{File: file, Err: fmt.Errorf("rendered object: %w", err)}
	}
	return append(objs, object{u: &unstructured.Unstructured{Object: m}, file: file}), nil
}
