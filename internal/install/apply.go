package install

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Action is what applying one object did.
type Action string

const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
)

// Result is one applied object.
type Result struct {
	// Ref names the object the way kubectl prints it: deployment.apps/flotilla-agent.
	Ref       string `json:"ref"`
	Namespace string `json:"namespace,omitempty"`
	Action    Action `json:"action"`
	// NotValidated is set by a dry-run for an object in a namespace that does not exist
	// yet: the API server cannot check it until the namespace is created.
	NotValidated bool `json:"notValidated,omitempty"`
}

func (r Result) String() string {
	s := fmt.Sprintf("%s %s", r.Ref, r.Action)
	if r.Namespace != "" {
		s += " (namespace " + r.Namespace + ")"
	}
	if r.NotValidated {
		s += ", not validated: its namespace does not exist yet"
	}
	return s
}

// ApplyOptions say how to apply.
type ApplyOptions struct {
	// DryRun sends every apply as a server-side dry-run: validated and admitted, not stored.
	DryRun bool
	// FieldManager owns the applied fields; default FieldManager.
	FieldManager string
}

// Applier applies objects to one cluster with server-side apply.
type Applier struct {
	c client.Client
}

// NewApplier connects to the cluster cfg points at.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", cfg.Host, err)
	}
	c, err := client.New(cfg, client.Options{HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return &Applier{c: c}, nil
}

// Apply applies objs in order, taking over fields another manager set (the install owns
// these objects), and says for each whether it was created, changed or already as wanted: a
// second run of the same install changes nothing. It stops at the first object refused, with
// the API server's reason; those before it stay applied, and a new run carries on.
func (a *Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured, o ApplyOptions) ([]Result, error) {
	if o.FieldManager == "" {
		o.FieldManager = FieldManager
	}
	opts := []client.ApplyOption{client.FieldOwner(o.FieldManager), client.ForceOwnership}
	if o.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	results := make([]Result, 0, len(objs))
	// Namespaces a dry-run would create: the API server cannot validate what goes in them.
	pending := map[string]bool{}
	for _, obj := range objs {
		res := Result{Ref: ref(obj), Namespace: obj.GetNamespace()}
		if pending[obj.GetNamespace()] {
			res.Action, res.NotValidated = Created, true
			results = append(results, res)
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		err := a.c.Get(ctx, client.ObjectKeyFromObject(obj), live)
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return results, fmt.Errorf("read %s: %w", describe(obj), err)
		}
		// An object that exists is first applied as a dry-run, and only applied for real when
		// that changes it: an apply that changes nothing may still be written (the API server
		// rewrites some kinds, such as a PersistentVolumeClaim, once), and a second install
		// must write nothing.
		if live != nil {
			preview := obj.DeepCopy()
			if err := a.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(preview), append(opts, client.DryRunAll)...); err != nil {
				return results, fmt.Errorf("apply %s: %w", describe(obj), err)
			}
			if sameContent(live, preview) {
				res.Action = Unchanged
				results = append(results, res)
				continue
			}
		}
		if err := a.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), opts...); err != nil {
			return results, fmt.Errorf("apply %s: %w", describe(obj), err)
		}
		res.Action = Configured
		if live == nil {
			res.Action = Created
			if o.DryRun && obj.GetKind() == "Namespace" && obj.GroupVersionKind().Group == "" {
				pending[obj.GetName()] = true
			}
		}
		results = append(results, res)
	}
	return results, nil
}

// sameContent says whether an apply left the object as it was. The resource version alone
// cannot say it for a dry-run, which stores nothing; the managed fields' timestamps change
// with any apply.
func sameContent(before, after *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		m := maps.Clone(u.Object)
		meta, _ := m["metadata"].(map[string]any)
		meta = maps.Clone(meta)
		for _, k := range []string{"managedFields", "resourceVersion", "generation"} {
			delete(meta, k)
		}
		m["metadata"] = meta
		return m
	}
	return equality.Semantic.DeepEqual(strip(before), strip(after))
}

// ref names obj as kubectl does: kind.group/name, lower case.
func ref(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	kind := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	return kind + "/" + obj.GetName()
}

func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ref(obj) + " in namespace " + ns
	}
	return ref(obj)
}
