package render

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PlainInProcessBytes is the most YAML and JSON a plain directory (no chart, no
// kustomization) may hold to be rendered inside the calling process rather than in a child.
// Starting a child costs a few hundred milliseconds (the benchmark in bench_sandbox_test.go),
// a hundred times a small render, and a plain directory's work is bounded by its input and
// the budget: go-yaml refuses alias bombs, nothing in it loops or doubles, substitution stops
// at the output bound (expansion), and its objects are held to the objects and output bounds.
const PlainInProcessBytes = 4 << 20

// errNeedsChild: the render is not a small plain directory (it is a chart, a kustomization,
// or more than PlainInProcessBytes of files), so the Sandbox renders it in a child.
var errNeedsChild = errors.New("render needs a child process")

// renderInProcess renders opts here when it names a small plain directory, holding its
// output to b; ok is false when it does not, and nothing was rendered.
func renderInProcess(ctx context.Context, opts Options, b Budget) (objs []*unstructured.Unstructured, ok bool, err error) {
	opts.plainOnly = PlainInProcessBytes
	found, err := renderObjects(ctx, opts)
	if errors.Is(err, errNeedsChild) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	if bound, file, err := b.admit(found, nil); err != nil || bound != "" {
		if err == nil {
			err = b.exceeded(bound, opts.Release, file)
		}
		return nil, true, err
	}
	objs = make([]*unstructured.Unstructured, len(found))
	for i, o := range found {
		objs[i] = o.u
	}
	return objs, true, nil
}
