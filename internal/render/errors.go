package render

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel causes a caller can test for with errors.Is. Each one means the artifact asked for
// something the agent refuses to do, so retrying the same revision cannot succeed.
var (
	// ErrOutsideRoot: a path, symlink or kustomization reference leads outside Options.Root.
	ErrOutsideRoot = errors.New("points outside the artifact root")
	// ErrRemoteNotAllowed: a kustomization or a generator or transformer config refers to a URL
	// or Git repository.
	ErrRemoteNotAllowed = errors.New("rendering reads only the artifact")
	// ErrConfigNotCheckable: a kustomization lists a kustomization directory as generator,
	// transformer or validator configs, which kustomize would build, so they could not be
	// checked for remote references before use.
	ErrConfigNotCheckable = errors.New("plugin configs must be inline or in files, not built by a kustomization")
	// ErrPluginsNotAllowed: a kustomization uses an exec, container-function or Go plugin.
	ErrPluginsNotAllowed = errors.New("plugins are not allowed")
	// ErrHelmNotAllowed: a kustomization inflates Helm charts.
	ErrHelmNotAllowed = errors.New("helm charts are not allowed")
	// ErrUndefinedVariable: an object refers to ${name} without a default and Options.Vars has
	// no such variable.
	ErrUndefinedVariable = errors.New("undefined variable")
)

// Error is the error Render returns. It says where the problem is, so that a status report can
// point a user at the line to fix, and wraps the cause for errors.Is and errors.As.
type Error struct {
	// File is the path of the file concerned, relative to Options.Root and slash-separated; empty
	// when the problem is not in one file (for example an invalid variable name).
	File string
	// Line is the 1-based line in File, or 0 when unknown.
	Line int
	// Object is Kind/namespace/name (Kind/name for objects without a namespace) when the problem
	// concerns one object.
	Object string
	// Err is the cause.
	Err error
}

// Error formats as "render apps/web.yaml:12: ConfigMap/default/web: cause".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("render")
	if e.File != "" {
		b.WriteString(" ")
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":")
			b.WriteString(strconv.Itoa(e.Line))
		}
	}
	b.WriteString(": ")
	if e.Object != "" {
		b.WriteString(e.Object)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// objectName is how errors name an object: Kind/namespace/name, or Kind/name without a
// namespace.
func objectName(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}
