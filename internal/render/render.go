package render

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Options say what to render.
type Options struct {
	// Root is the unpacked artifact directory; nothing outside it is ever read.
	Root string
	// Path is the directory inside Root to render, slash-separated; "" or "." is Root itself.
	// It must not lead outside Root, directly or through a symlink.
	Path string
	// Vars are the substitution variables for ${name} references (see ClusterVars). Names must
	// match ^[_a-zA-Z][_a-zA-Z0-9]*$.
	Vars map[string]string
	// Helm says how to render Path when it is a chart directory (it holds Chart.yaml); nil:
	// as `helm template` would with its defaults. Ignored for other directories.
	Helm *Helm
	// Decrypt decrypts SOPS-encrypted documents (documents with a top-level "sops" key). Nil:
	// such documents are refused (ErrEncrypted), unless KeepEncrypted.
	Decrypt Decryptor
	// KeepEncrypted passes encrypted documents through as ciphertext, for `flotilla render`
	// without --decrypt. The agent never sets it.
	KeepEncrypted bool
	// Budget bounds the render while it runs; zero fields take DefaultBudget's.
	Budget Budget

	// Project and Release name the release being rendered: Sandbox shares its child
	// processes fairly between Projects, and a budget error names the Release.
	Project, Release string

	// at, when set, is told the file the render is at (a chart's directory, a
	// kustomization): the child process reports it, so that a budget error can name it.
	at func(file string)
	// plainOnly, when above zero, renders only a plain directory of at most that many bytes
	// of files, and returns errNeedsChild for anything else (Sandbox: see inprocess.go).
	plainOnly int64

	// unchecked skips the checks that run before kustomize (policy.go), leaving only the
	// sealed file system: a test hook, to show that the seal holds by itself.
	unchecked bool
}

// Render returns the objects that Options.Path describes, with variables substituted, in a
// stable order: input file order for a plain directory, kustomize's output order for a
// kustomization. Errors are *Error, or *BudgetError when substituted values pass the
// budget's output bound.
func Render(ctx context.Context, opts Options) ([]*unstructured.Unstructured, error) {
	objs, err := renderObjects(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.u
	}
	return out, nil
}

// renderObjects is render with its errors as *Error.
func renderObjects(ctx context.Context, opts Options) ([]object, error) {
	objs, err := render(ctx, opts)
	if err != nil {
		var re *Error
		var be *BudgetError
		if !errors.As(err, &re) && !errors.As(err, &be) && !errors.Is(err, errNeedsChild) {
			err = &Error{Err: err} // context cancellation
		}
		return nil, err
	}
	return objs, nil
}

func render(ctx context.Context, opts Options) ([]object, error) {
	vars, err := checkVars(opts.Vars)
	if err != nil {
		return nil, err
	}
	root, err := openRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	rel, dir, err := resolvePath(root, opts.Path)
	if err != nil {
		return nil, err
	}
	var objs []object
	chart, kf := isChartDir(dir), findKustomization(dir)
	if opts.plainOnly > 0 && (chart || kf != "") {
		return nil, errNeedsChild
	}
	b := opts.Budget.WithDefaults(DefaultBudget)
	if chart {
		opts.tell(rel)
		// A chart's values are substituted before it renders; its output never is.
		return renderChart(ctx, root, rel, dir, opts, vars)
	}
	if kf != "" {
		opts.tell(joinRel(rel, kf))
		objs, err = buildKustomization(ctx, root, rel, kf, opts.unchecked, opts.decryption())
	} else {
		objs, err = readPlain(ctx, root, rel, dir, opts.decryption(), opts.plainOnly)
	}
	if err != nil {
		return nil, err
	}
	if err := substituteAll(ctx, objs, vars, &expansion{left: b.OutputBytes}); err != nil {
		if re := (*Error)(nil); errors.Is(err, errExpansion) && errors.As(err, &re) {
			return nil, b.exceeded("output", opts.Release, re.File)
		}
		return nil, err
	}
	return objs, nil
}

func (o Options) tell(file string) {
	if o.at != nil {
		o.at(file)
	}
}
