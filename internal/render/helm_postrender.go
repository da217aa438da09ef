package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// postRender applies kustomize patches to a chart's CRDs and manifests, as a post-renderer
// given to `helm template --post-renderer` sees them (Helm 3 gives it neither hooks nor
// anything else).
//
// kustomize builds a kustomization of its own on an in-memory file system that holds only the
// chart's output (one resource file, each object written as JSON so that every string stays a
// string whatever YAML version reads it) and the patches: it has nothing else to read, nothing
// names a remote location, and plugins are disabled.
func postRender(ctx context.Context, rel string, objs []object, patches []Patch) ([]object, error) {
	fail := func(err error) error { return &Error{File: rel, Err: fmt.Errorf("post-render: %w", err)} }
	fsys := filesys.MakeFsInMemory()
	var res bytes.Buffer
	files := map[string]string{} // object key -> the file it came from
	for _, o := range objs {
		data, err := json.Marshal(o.u.Object)
		if err != nil {
			return nil, &Error{File: o.file, Err: fmt.Errorf("post-render: %w", err)}
		}
		res.WriteString("---\n")
		res.Write(data)
		res.WriteString("\n")
		files[postRenderKey(o.u.GetAPIVersion(), o.u.GetKind(), o.u.GetNamespace(), o.u.GetName())] = o.file
	}
	if err := fsys.WriteFile("/chart/output.yaml", res.Bytes()); err != nil {
		return nil, fail(err)
	}
	// Patch files are named by index; errors name them as the user does.
	var pairs []string
	var entries []map[string]any
	for i, p := range patches {
		name := p.Name
		if name == "" {
			name = fmt.Sprintf("patch %d", i+1)
		}
		var n yaml.Node
		if err := yaml.Unmarshal(p.Patch, &n); err != nil {
			return nil, fail(fmt.Errorf("%s: %w", name, err))
		}
		if n.Kind == 0 {
			return nil, fail(fmt.Errorf("%s: empty patch", name))
		}
		file := fmt.Sprintf("patches/%d.yaml", i)
		pairs = append(pairs, "/chart/"+file, name, file, name)
		if err := fsys.WriteFile("/chart/"+file, p.Patch); err != nil {
			return nil, fail(err)
		}
		entry := map[string]any{"path": file}
		if t := p.Target; t != nil {
			target := map[string]any{}
			for k, v := range map[string]string{"group": t.Group, "version": t.Version, "kind": t.Kind,
				"name": t.Name, "namespace": t.Namespace, "labelSelector": t.LabelSelector,
				"annotationSelector": t.AnnotationSelector} {
				if v != "" {
					target[k] = v
				}
			}
			entry["target"] = target
		}
		entries = append(entries, entry)
	}
	names := strings.NewReplacer(pairs...)
	kust, err := json.Marshal(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  []string{"output.yaml"},
		"patches":    entries,
	})
	if err != nil {
		return nil, fail(err)
	}
	if err := fsys.WriteFile("/chart/kustomization.yaml", kust); err != nil {
		return nil, fail(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionNone // keep Helm's order
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := runKustomize(opts, fsys, "/chart")
	if err != nil {
		return nil, fail(errors.New(names.Replace(err.Error())))
	}
	out := make([]object, 0, m.Size())
	for _, r := range m.Resources() {
		id := r.OrgId()
		file, ok := files[postRenderKey(id.ApiVersion(), id.Kind, id.Namespace, id.Name)]
		if !ok {
			file = rel
		}
		v, err := newYAMLConverter().value(r.YNode())
		if err != nil {
			return nil, &Error{File: file, Err: fmt.Errorf("post-render output: %w", err)}
		}
		mv, ok := v.(map[string]any)
		if !ok {
			return nil, &Error{File: file, Err: fmt.Errorf("post-render output: want a Kubernetes object, got %s", describe(v))}
		}
		if err := checkObject(mv); err != nil {
			return nil, &Error{File: file, Err: fmt.Errorf("post-render output: %w", err)}
		}
		out = append(out, object{u: &unstructured.Unstructured{Object: mv}, file: file})
	}
	return out, nil
}

func postRenderKey(apiVersion, kind, namespace, name string) string {
	return apiVersion + "|" + kind + "|" + namespace + "|" + name
}
