package schedule

import (
	"fmt"
	"path"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// pathTemplate is a release's parsed path template.
type pathTemplate struct {
	tmpl *template.Template
	// parts is the template as literal text and field references, when it is nothing more
	// (as "clusters/{{ .Cluster.Labels.region }}/baseline" is): executing that directly avoids
	// text/template's reflection, which was a third of a 1,000-cluster plan's time. nil when
	// the template uses anything else (functions, conditions, variables).
	parts []pathPart
}

// pathPart is literal text, or the cluster's name, or one of its labels.
type pathPart struct {
	text  string
	name  bool   // the cluster's name
	label string // the label with this key, when not empty
}

func newPathTemplate(tmpl *template.Template) *pathTemplate {
	return &pathTemplate{tmpl: tmpl, parts: simpleParts(tmpl)}
}

func simpleParts(tmpl *template.Template) []pathPart {
	if tmpl.Tree == nil || tmpl.Tree.Root == nil || len(tmpl.Templates()) > 1 {
		return nil
	}
	var parts []pathPart
	for _, n := range tmpl.Tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			parts = append(parts, pathPart{text: string(n.Text)})
		case *parse.ActionNode:
			if len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 || len(n.Pipe.Cmds[0].Args) != 1 {
				return nil
			}
			f, ok := n.Pipe.Cmds[0].Args[0].(*parse.FieldNode)
			switch {
			case !ok || len(f.Ident) < 2 || f.Ident[0] != "Cluster":
				return nil
			case len(f.Ident) == 2 && f.Ident[1] == "Name":
				parts = append(parts, pathPart{name: true})
			case len(f.Ident) == 3 && f.Ident[1] == "Labels":
				parts = append(parts, pathPart{label: f.Ident[2]})
			default:
				return nil
			}
		default:
			return nil
		}
	}
	return parts
}

func (t *pathTemplate) execute(c Cluster) (string, error) {
	if t.parts != nil {
		var b strings.Builder
		for _, p := range t.parts {
			if b.Len() > v1alpha1.MaxPathLength {
				return "", v1alpha1.ErrPathTooLong // as v1alpha1.ExecutePath says it
			}
			switch {
			case p.name:
				b.WriteString(c.Name)
			case p.label != "":
				v, ok := c.Labels[p.label]
				if !ok {
					// Let text/template say it, with its position in the template.
					return t.executeTemplate(c)
				}
				b.WriteString(v)
			default:
				b.WriteString(p.text)
			}
		}
		if b.Len() > v1alpha1.MaxPathLength {
			return "", v1alpha1.ErrPathTooLong
		}
		return b.String(), nil
	}
	return t.executeTemplate(c)
}

func (t *pathTemplate) executeTemplate(c Cluster) (string, error) {
	data := v1alpha1.PathData{Cluster: v1alpha1.PathCluster{Name: c.Name, Labels: c.Labels}}
	// "template: path:1:20: executing ... map has no entry for key "region"", or
	// v1alpha1.ErrPathTooLong.
	return v1alpha1.ExecutePath(t.tmpl, data)
}

// resolvePath returns the release's path for cluster c, cleaned, or why there is none.
func (r *prepared) resolvePath(c Cluster) (string, error) {
	if r.pathErr != nil {
		return "", r.pathErr
	}
	p := r.path
	if r.tmpl != nil {
		var err error
		if p, err = r.tmpl.execute(c); err != nil {
			return "", err
		}
	}
	return checkResolved(p)
}

// checkResolved keeps a path inside the artifact. Validation checked the template's text; this
// checks what a cluster's name and labels made of it.
func checkResolved(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	if len(p) > v1alpha1.MaxPathLength {
		return "", v1alpha1.ErrPathTooLong
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is absolute: it must be relative to the root of the source", p)
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			return "", fmt.Errorf("path %q leaves the source: it must not contain \"..\"", p)
		}
	}
	// "clusters//eu/" and "clusters/eu" are the same directory; one spelling keeps the
	// encoded desired state from changing when only the spelling does.
	if p = path.Clean(p); p == "." {
		p = ""
	}
	return p, nil
}
