package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/render"
)

func newRenderCommand(s streams) *cobra.Command {
	var (
		path   string
		vars   []string
		format = newChoice("yaml", "json")
		chart  chartFlags
		sops   decryptFlags
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

Objects are printed in render order, with the keys of each object sorted.

If DIR, or the directory --path names, holds Chart.yaml, it is a Helm chart and is rendered
in-process as "helm template NAME DIR --include-crds --skip-tests" renders it, object for
object, with its dependencies from its charts/ directory (never downloaded): the chart's CRDs
first, then its objects in Helm's install order, then its hooks (pre-* before post-*, by
weight) with their helm.sh/hook annotations; test hooks are left out. --values files are
merged in order, then --set over them, as helm's -f and --set; --var variables are
substituted in the text of the --values files before they are parsed, never in the chart or
its output. An agent renders with its cluster's Kubernetes version and API versions: pass
them with --kube-version and --api-versions to see what a cluster gets (without them, Helm's
defaults). Templates see .Release.IsInstall true and .Release.IsUpgrade false, and lookup
finds nothing, as with helm template.

SOPS-encrypted documents (flotilla secret encrypt, or the sops CLI) are printed as the
ciphertext they are; with --decrypt --key-file FILE they are decrypted with that age key, as
an agent decrypts them with its own (docs/secrets.md).`,
		Example: `  # Render a plain directory of manifests
  flotilla render ./deploy

  # Render the production overlay as cluster edge-1, labelled region=eu-west, would get it
  flotilla render ./artifact --path apps/prod \
    --var cluster_name=edge-1 --var cluster_label_region=eu-west

  # Count the objects of each kind
  flotilla render ./deploy -o json | jq -r '.items[].kind' | sort | uniq -c

  # Render a Helm chart as release "shop" in namespace "web" of a v1.31 cluster
  flotilla render ./charts/webapp --release-name shop --namespace web \
    --values values/prod.yaml --set replicaCount=3 \
    --kube-version v1.31.4 --api-versions monitoring.coreos.com/v1

  # Show the plaintext of the SOPS-encrypted Secrets, with the recovery key
  flotilla render ./deploy --decrypt --key-file ~/.config/flotilla/recovery.txt

  # The chart of a Helm source as cluster edge-1 gets it, values using its variables
  flotilla render ./artifact --values values/edge.yaml --var cluster_name=edge-1`,
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
			helm, err := chart.options(args[0], path, cmd)
			if err != nil {
				return err
			}
			dec, keep, err := sops.options()
			if err != nil {
				return err
			}
			objs, err := render.Render(cmd.Context(), render.Options{Root: args[0], Path: path, Vars: vm, Helm: helm, Decrypt: dec, KeepEncrypted: keep})
			if err != nil {
				return err
			}
			if format.Value == "json" {
				return writeList(s.out, objs)
			}
			return writeYAMLDocuments(s.out, objs)
		},
	}
	sops.bind(cmd)
	cmd.Flags().StringVar(&path, "path", "", "directory inside DIR to render (default: DIR itself)")
	cmd.Flags().StringArrayVar(&vars, "var", nil, "substitution variable as NAME=VALUE; repeat the flag for more")
	cmd.Flags().VarP(format, "output", "o", "output format: yaml (documents separated by ---) or json (a v1 List)")
	chart.register(cmd)
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

// chartFlags are the flags of a chart directory, helm template's names and defaults.
type chartFlags struct {
	releaseName, namespace, kubeVersion string
	valuesFiles, set, apiVersions       []string
	includeCRDs                         bool
}

func (f *chartFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.releaseName, "release-name", render.DefaultReleaseName, "chart: .Release.Name")
	fl.StringVar(&f.namespace, "namespace", "default", "chart: .Release.Namespace")
	fl.StringArrayVarP(&f.valuesFiles, "values", "f", nil, "chart: a values file, merged over the chart's values and the --values before it; repeat the flag for more")
	fl.StringArrayVar(&f.set, "set", nil, "chart: a value as helm --set takes it (a.b=c, list={x,y}), applied over the --values; repeat the flag for more")
	fl.StringVar(&f.kubeVersion, "kube-version", "", "chart: .Capabilities.KubeVersion, such as v1.31.4 (default Helm's)")
	fl.StringSliceVar(&f.apiVersions, "api-versions", nil, "chart: an API version for .Capabilities.APIVersions beyond Helm's defaults (apps/v1, or apps/v1/Deployment for a kind); repeat the flag or separate with commas")
	fl.BoolVar(&f.includeCRDs, "include-crds", true, "chart: render the chart's crds/ directories (its subcharts' too) first")
}

// chartFlagNames are the flags that only a chart directory takes.
var chartFlagNames = []string{"release-name", "namespace", "values", "set", "kube-version", "api-versions", "include-crds"}

// options returns how to render the chart at path in root, reading the --values files; nil
// when the directory is not a chart, where any chart flag is a usage error.
func (f *chartFlags) options(root, path string, cmd *cobra.Command) (*render.Helm, error) {
	st, err := os.Stat(filepath.Join(root, filepath.FromSlash(path), "Chart.yaml"))
	if err != nil || !st.Mode().IsRegular() {
		for _, name := range chartFlagNames {
			if cmd.Flags().Changed(name) {
				return nil, usageError{fmt.Errorf("--%s applies to a Helm chart, and %s has no Chart.yaml", name, filepath.Join(root, filepath.FromSlash(path)))}
			}
		}
		return nil, nil
	}
	h := &render.Helm{ReleaseName: f.releaseName, Namespace: f.namespace, Set: f.set, IncludeCRDs: f.includeCRDs,
		KubeVersion: f.kubeVersion, APIVersions: f.apiVersions}
	for _, name := range f.valuesFiles {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("--values: %w", err)
		}
		h.ValuesFiles = append(h.ValuesFiles, render.ValuesFile{Name: name, Data: data})
	}
	return h, nil
}
