package v1alpha1

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// PathData is what a Release's path template is executed with.
type PathData struct {
	Cluster PathCluster
}

// PathCluster is the cluster a path is resolved for.
type PathCluster struct {
	Name   string
	Labels map[string]string
}

// MaxPathLength bounds a resolved path, in bytes. A path template can only copy the cluster's
// name and labels into literal text, so a real path is far shorter; the bound is what keeps a
// template from being a way to make the hub build an arbitrarily large string.
const MaxPathLength = 1024

// ErrPathTooLong is the error for a path that resolves to more than [MaxPathLength] bytes.
var ErrPathTooLong = fmt.Errorf("resolved path is longer than %d bytes", MaxPathLength)

// pathTemplateUse says what a path template may contain; every refusal ends with it.
const pathTemplateUse = `a path template can use .Cluster.Name, .Cluster.Labels.<key> and index .Cluster.Labels "<key>"`

// PathTemplate parses Path as a text/template over [PathData]. It is parsed with
// missingkey=error, so executing it for a cluster that lacks a label the template names fails
// instead of producing "clusters//baseline".
//
// Only literal text and the references in [PathCluster] are allowed: {{ .Cluster.Name }},
// {{ .Cluster.Labels.<key> }} and {{ index .Cluster.Labels "<key>" }}. Anything else (range,
// with, if, template, define, block, variables, pipelines, and every function but index) is an
// error: {{ range 1000000000 }} or {{ printf "%0999999999d" 0 }} would make the hub build a
// string of any size for every cluster. Execute the template with [ExecutePath], which bounds
// the result as well.
func (s ReleaseSpec) PathTemplate() (*template.Template, error) {
	t, err := parsePath(s.Path)
	if err != nil {
		return nil, err
	}
	if msgs := templateProblems(t); len(msgs) > 0 {
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	return t, nil
}

// ExecutePath executes a path template from [ReleaseSpec.PathTemplate] for a cluster. It stops
// with [ErrPathTooLong] as soon as the result would exceed [MaxPathLength] bytes.
func ExecutePath(t *template.Template, data PathData) (string, error) {
	w := &boundedWriter{max: MaxPathLength}
	if err := t.Execute(w, data); err != nil {
		return "", err // text/template returns a write error as it is: ErrPathTooLong
	}
	return w.b.String(), nil
}

type boundedWriter struct {
	b   strings.Builder
	max int
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.max {
		return 0, ErrPathTooLong
	}
	return w.b.Write(p)
}

func parsePath(p string) (*template.Template, error) {
	return template.New("path").Option("missingkey=error").Parse(p)
}

// checkPath reports what can be known about a path template without a cluster: that it parses,
// that it uses only what a path template may, that it stays inside the source, and that the
// fields it names exist. The scheduler checks the resolved path again, since a label value is
// only known per cluster.
func checkPath(p string) []string {
	var msgs []string
	if strings.HasPrefix(p, "/") {
		msgs = append(msgs, fmt.Sprintf("path %q must be relative to the root of the source", p))
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			msgs = append(msgs, fmt.Sprintf("path %q must not contain \"..\"", p))
			break
		}
	}
	if len(p) > MaxPathLength {
		msgs = append(msgs, fmt.Sprintf("path is %d bytes long: it must be at most %d", len(p), MaxPathLength))
	}
	t, err := parsePath(p)
	if err != nil {
		return append(msgs, err.Error())
	}
	return append(msgs, templateProblems(t)...)
}

// templateProblems checks that a parsed path template holds only literal text and the
// references a path template may use. text/template keeps no comments in the tree, so those
// pass.
func templateProblems(t *template.Template) []string {
	var msgs []string
	if len(t.Templates()) > 1 {
		// {{ define }} and {{ block }} add templates beside "path".
		msgs = append(msgs, "define and block are not allowed: "+pathTemplateUse)
	}
	if t.Tree == nil || t.Tree.Root == nil {
		return msgs
	}
	tree := t.Tree
	for _, n := range tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
		case *parse.ActionNode:
			if allowedAction(n) {
				continue
			}
			typos := checkFieldsOf(n)
			msgs = append(msgs, typos...)
			if len(typos) == 0 || !isFieldReference(n) {
				msgs = append(msgs, refused(tree, n, strings.TrimSuffix(strings.TrimPrefix(n.String(), "{{"), "}}")))
			}
		case *parse.IfNode:
			msgs = append(msgs, refused(tree, n, "if"))
		case *parse.RangeNode:
			msgs = append(msgs, refused(tree, n, "range"))
		case *parse.WithNode:
			msgs = append(msgs, refused(tree, n, "with"))
		case *parse.TemplateNode:
			msgs = append(msgs, refused(tree, n, "template"))
		default:
			msgs = append(msgs, refused(tree, n, n.String()))
		}
	}
	return msgs
}

// refused says that what, at node n, is not allowed: "range at path:1:2 is not allowed: ...".
func refused(tree *parse.Tree, n parse.Node, what string) string {
	loc, _ := tree.ErrorContext(n)
	return fmt.Sprintf("%s at %s is not allowed: %s", strings.TrimSpace(what), loc, pathTemplateUse)
}

// checkFieldsOf names the field references of an action that do not exist (.Region,
// .Cluster.Label.region), which is a better message for a typo than "not allowed"; nil when
// there are none.
func checkFieldsOf(n *parse.ActionNode) []string {
	var msgs []string
	for _, c := range n.Pipe.Cmds {
		for _, a := range c.Args {
			if f, ok := a.(*parse.FieldNode); ok {
				msgs = append(msgs, checkFieldChain(f.Ident)...)
			}
		}
	}
	return msgs
}

// isFieldReference reports whether n is a lone field reference, such as {{ .Region }}.
func isFieldReference(n *parse.ActionNode) bool {
	p := n.Pipe
	if len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	_, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
	return ok
}

// allowedAction reports whether n is {{ .Cluster.Name }}, {{ .Cluster.Labels.<key> }} or
// {{ index .Cluster.Labels "<key>" }}.
func allowedAction(n *parse.ActionNode) bool {
	p := n.Pipe
	if len(p.Decl) > 0 || len(p.Cmds) != 1 {
		return false
	}
	args := p.Cmds[0].Args
	switch a := args[0].(type) {
	case *parse.FieldNode:
		id := a.Ident
		return len(args) == 1 && len(id) >= 2 && id[0] == "Cluster" &&
			(len(id) == 2 && id[1] == "Name" || len(id) == 3 && id[1] == "Labels")
	case *parse.IdentifierNode:
		if a.Ident != "index" || len(args) != 3 {
			return false
		}
		f, okF := args[1].(*parse.FieldNode)
		_, okS := args[2].(*parse.StringNode)
		return okF && okS && len(f.Ident) == 2 && f.Ident[0] == "Cluster" && f.Ident[1] == "Labels"
	}
	return false
}

func checkFieldChain(ids []string) []string {
	ref := "." + strings.Join(ids, ".")
	switch {
	case ids[0] != "Cluster":
		return []string{fmt.Sprintf("%s does not exist: %s", ref, fieldUse)}
	case len(ids) == 1:
		return nil
	case ids[1] == "Name" && len(ids) == 2, ids[1] == "Labels" && len(ids) <= 3:
		return nil
	default:
		return []string{fmt.Sprintf("%s does not exist: %s", ref, fieldUse)}
	}
}

// fieldUse is what a misspelt field reference is told.
const fieldUse = "a path template can use .Cluster.Name and .Cluster.Labels.<key>"
