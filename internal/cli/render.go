package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/agent/render"
)

func newRenderCommand(s streams) *cobra.Command {
	var (
		path   string
		vars   []string
		format = newChoice("yaml", "json")
	)
	cmd := &cobra.Command{
		Use:   "render DIR",
		Short: "Print the objects an agent would apply from an artifact directory",
		Long: `Render the Kubernetes objects in an artifact directory exactly as a flotilla agent does, and
print them: as YAML documents separated by "---" (like kustomize build), or with -o json as
a single v1 List whose items are the objects (jq '.items[]' walks them; kubectl accepts it).

If DIR, or the directory --path names inside it, has a kustomization.yaml, it is built with
kustomize; remote bases, Helm charts and plugins are refused. Otherwise every .yaml, .yml and
.json file below it is read, in path order, skipping hidden files. Nothing outside DIR is read,
symlinks included.

Variables are then substituted as Flux's postBuild.substitute does: ${var}, ${var:=default}
and ${var:-default} are replaced, $var is left alone, and $${var} gives a literal ${var}. A
reference without a default to a variable not given with --var is an error. An agent sets
cluster_name, and cluster_label_<key> for each label of its cluster (characters other than
letters, digits and _ in the key become _); pass them with --var to see what a cluster gets.
Objects annotated flotilla.dev/substitute: disabled are not substituted.

Objects are printed in render order, with the keys of each object sorted.`,
		Example: `  # Render a plain directory of manifests
  flotilla render ./deploy

  # Render the production overlay as cluster edge-1, labelled region=eu-west, would get it
  flotilla render ./artifact --path apps/prod \
    --var cluster_name=edge-1 --var cluster_label_region=eu-west

  # Count the objects of each kind
  flotilla render ./deploy -o json | jq -r '.items[].kind' | sort | uniq -c`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("render takes one argument, the artifact directory; got %d", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			vm, err := parseVars(vars)
			if err != nil {
				return usageError{err}
			}
			objs, err := render.Render(cmd.Context(), render.Options{Root: args[0], Path: path, Vars: vm})
			if err != nil {
				return err
			}
			if format.value == "json" {
				return writeList(s.out, objs)
			}
			return writeYAMLDocuments(s.out, objs)
		},
	}
	cmd.Flags().StringVar(&path, "path", "", "directory inside DIR to render (default: DIR itself)")
	cmd.Flags().StringArrayVar(&vars, "var", nil, "substitution variable as NAME=VALUE; repeat the flag for more")
	cmd.Flags().VarP(format, "output", "o", "output format: yaml (documents separated by ---) or json (a v1 List)")
	return cmd
}

// parseVars turns NAME=VALUE flags into variables; a later flag for the same name wins.
func parseVars(flags []string) (map[string]string, error) {
	vars := make(map[string]string, len(flags))
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--var %q: want NAME=VALUE", f)
		}
		vars[name] = value
	}
	return vars, nil
}

func writeYAMLDocuments(w io.Writer, objs []*unstructured.Unstructured) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	enc.CompactSeqIndent() // "- name: x" under its key, as kustomize build writes it
	for _, o := range objs {
		if err := enc.Encode(o.Object); err != nil {
			return fmt.Errorf("%s/%s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return enc.Close()
}

func writeList(w io.Writer, objs []*unstructured.Unstructured) error {
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o.Object
	}
	return writeJSON(w, map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}
