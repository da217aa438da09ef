package v1alpha1

import (
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

// PathTemplate parses Path as a text/template over [PathData]. It is parsed with
// missingkey=error, so executing it for a cluster that lacks a label the template names fails
// instead of producing "clusters//baseline".
func (s ReleaseSpec) PathTemplate() (*template.Template, error) {
	t, err := template.New("path").Option("missingkey=error").Parse(s.Path)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// checkPath reports what can be known about a path template without a cluster: that it parses,
// that it stays inside the source, and that the fields it names exist. The scheduler checks
// the resolved path again, since a label value is only known per cluster.
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
	t, err := ReleaseSpec{Path: p}.PathTemplate()
	if err != nil {
		return append(msgs, err.Error())
	}
	if t.Tree != nil && t.Tree.Root != nil {
		msgs = append(msgs, checkFields(t.Tree.Root, true)...)
	}
	return msgs
}

// checkFields finds references such as .Cluster.Label.region (a typo for Labels) that would
// fail for every cluster. Inside with and range the dot is no longer PathData, so their bodies
// are only checked for $-rooted references; everything it cannot judge it lets through, since
// execution will catch the rest.
func checkFields(n parse.Node, dotIsRoot bool) []string {
	var msgs []string
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			msgs = append(msgs, checkFields(c, dotIsRoot)...)
		}
	case *parse.ActionNode:
		msgs = append(msgs, checkFields(n.Pipe, dotIsRoot)...)
	case *parse.IfNode:
		msgs = append(msgs, checkBranch(&n.BranchNode, dotIsRoot, dotIsRoot)...)
	case *parse.WithNode:
		msgs = append(msgs, checkBranch(&n.BranchNode, dotIsRoot, false)...)
	case *parse.RangeNode:
		msgs = append(msgs, checkBranch(&n.BranchNode, dotIsRoot, false)...)
	case *parse.TemplateNode:
		msgs = append(msgs, checkFields(n.Pipe, dotIsRoot)...)
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Cmds {
			for _, a := range c.Args {
				msgs = append(msgs, checkFields(a, dotIsRoot)...)
			}
		}
	case *parse.FieldNode:
		if dotIsRoot {
			msgs = append(msgs, checkFieldChain(n.Ident)...)
		}
	case *parse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			msgs = append(msgs, checkFieldChain(n.Ident[1:])...)
		}
	}
	return msgs
}

func checkBranch(b *parse.BranchNode, dotIsRoot, bodyDotIsRoot bool) []string {
	msgs := checkFields(b.Pipe, dotIsRoot)
	msgs = append(msgs, checkFields(b.List, bodyDotIsRoot)...)
	// In the else branch of with and range the dot is unchanged.
	return append(msgs, checkFields(b.ElseList, dotIsRoot)...)
}

func checkFieldChain(ids []string) []string {
	ref := "." + strings.Join(ids, ".")
	const want = "a path template can use .Cluster.Name and .Cluster.Labels.<key>"
	switch {
	case ids[0] != "Cluster":
		return []string{fmt.Sprintf("%s does not exist: %s", ref, want)}
	case len(ids) == 1:
		return nil
	case ids[1] == "Name" && len(ids) == 2, ids[1] == "Labels" && len(ids) <= 3:
		return nil
	default:
		return []string{fmt.Sprintf("%s does not exist: %s", ref, want)}
	}
}
