package render

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RenderUnchecked is Render without the checks that run before kustomize, leaving only the
// sealed file system kustomize reads through.
func RenderUnchecked(ctx context.Context, opts Options) ([]*unstructured.Unstructured, error) {
	opts.unchecked = true
	return Render(ctx, opts)
}
