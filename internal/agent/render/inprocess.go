package render

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PlainInProcessBytes is the most YAML and JSON a plain directory (no chart, no
// kustomization) may hold to be rendered inside the calling process rather than in a child.
// Starting a child costs a few hundred milliseconds (the benchmark in bench_sandbox_test.go),
// a hundred times a small render, and a plain directory's work is linear in its input: go-yaml
// refuses alias bombs, and nothing in it loops or doubles. So a small one is bounded by its
// input, and its output is still held to the budget's objects and bytes.
const PlainInProcessBytes = 4 << 20

// smallPlain reports whether opts names a plain directory of at most PlainInProcessBytes of
// manifests. Any doubt (an unreadable root, a symlink, a chart or kustomization) says no: the
// child process then decides, with its errors.
func smallPlain(opts Options) bool {
	root, err := openRoot(opts.Root)
	if err != nil {
		return false
	}
	_, dir, err := resolvePath(root, opts.Path)
	if err != nil || isChartDir(dir) || findKustomization(dir) != "" {
		return false
	}
	var total int64
	errTooBig := errors.New("too big")
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&os.ModeSymlink != 0 {
			return errTooBig // resolved by the child, which names a bad one
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if total += info.Size(); total > PlainInProcessBytes {
			return errTooBig
		}
		return nil
	})
	return err == nil
}

// renderInProcess renders a small plain directory here, holding its output to b.
func renderInProcess(ctx context.Context, opts Options, b Budget) ([]*unstructured.Unstructured, error) {
	objs, err := renderObjects(ctx, opts)
	if err != nil {
		return nil, err
	}
	// The file named is the first one past the bound, as the child names it.
	var size int64
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		if i >= b.Objects {
			return nil, &BudgetError{Release: opts.Release, Bound: "objects", Limit: strconv.Itoa(b.Objects), File: o.file}
		}
		raw, err := json.Marshal(o.u.Object)
		if err != nil {
			return nil, &Error{File: o.file, Err: err}
		}
		if size += int64(len(raw)); size > b.OutputBytes {
			return nil, &BudgetError{Release: opts.Release, Bound: "output", Limit: FormatBytes(b.OutputBytes), File: o.file}
		}
		out[i] = o.u
	}
	return out, nil
}
