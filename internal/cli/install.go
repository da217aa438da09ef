package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/internal/cli/clikit"
	"github.com/flotilla/flotilla/internal/install"
	"github.com/flotilla/flotilla/internal/version"
)

// readJoinTokenFile reads --join-token-file's token (clikit.ReadJoinTokenFile).
var readJoinTokenFile = clikit.ReadJoinTokenFile

func newAgentInstallCommand(s streams) *cobra.Command {
	var (
		opts          install.Options
		token         string
		tokenFile     string
		kubeconfig    string
		kubecontext   string
		dryRun        string
		output        string
		timeout       time.Duration
		defaultImage  = install.DefaultImage(version.Get().Version)
		noKubeconfigs = "the kubeconfig of the cluster to install into (default: $KUBECONFIG or ~/.kube/config, as kubectl)"
	)
	cmd := &cobra.Command{
		Use:   "install --hub URL (--join-token T | --join-token-file F)",
		Short: "Install the agent into a cluster, or print its manifests",
		Long: `Install the agent into the cluster a kubeconfig points at, with server-side apply: the
namespace, the agent's ServiceAccount and its least-privilege RBAC (its inventories in
flotilla-system, impersonation of the ServiceAccounts Projects name; --platform-admin binds it to
cluster-admin too, for releases of the platform project), a Secret with the join token, a volume
for its state dir, and the Deployment. The agent reads the token from the Secret as a file: it is
in no command line and no pod spec.

It waits until every object is applied, not until the agent's pod runs, and prints what it did.
Running it again with the same flags changes nothing. With --dry-run it prints the manifests
(YAML, or -o json) instead, for kubectl apply -f - or a GitOps repository; --dry-run=server has
the API server validate every object without storing anything.

Get the join token with "flotilla cluster add NAME". Prefer --join-token-file (or - for standard
input) to --join-token, which shows the token in this machine's process listing.`,
		Example: `  # Join the cluster of the current kubeconfig context to the hub
  flotilla cluster add edge-1 -o json | jq -r .joinToken > edge-1.token
  flotilla agent install --hub https://hub.example.com:8443 --join-token-file edge-1.token

  # Another cluster, its releases of the platform project allowed to manage anything
  flotilla agent install --hub https://hub.example.com:8443 --join-token-file edge-2.token \
    --kubeconfig ~/.kube/edge-2 --platform-admin

  # Print the manifests instead, to apply them with kubectl or commit them
  flotilla agent install --hub https://hub.example.com:8443 --join-token-file edge-3.token \
    --dry-run -o yaml > agent.yaml

  # Only check them against the cluster's API server
  flotilla agent install --hub https://hub.example.com:8443 --join-token-file - --dry-run=server < edge-1.token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case token != "" && tokenFile != "":
				return usageError{errors.New("give the join token once: --join-token or --join-token-file, not both")}
			case token == "" && tokenFile == "":
				return usageError{errors.New("--join-token-file or --join-token is required: the token from \"flotilla cluster add NAME\"")}
			case tokenFile != "":
				var err error
				if token, err = readJoinTokenFile(tokenFile, cmd.InOrStdin()); err != nil {
					return usageError{err}
				}
			}
			switch dryRun {
			case "none", "client", "server":
			default:
				return usageError{fmt.Errorf("--dry-run %q: want client (print the manifests), server (validate them in the cluster) or none", dryRun)}
			}
			switch {
			case output != "" && output != "yaml" && output != "json" && output != "text":
				return usageError{fmt.Errorf("-o %q: want yaml or json (with --dry-run), text or json (otherwise)", output)}
			case dryRun == "client" && output == "text":
				return usageError{errors.New("-o text: --dry-run prints the manifests, as yaml or json")}
			case dryRun != "client" && output == "yaml":
				return usageError{errors.New("-o yaml prints the manifests: add --dry-run")}
			}
			opts.JoinToken = token
			if opts.Image == "" {
				opts.Image = defaultImage
			}
			objs, err := install.Manifests(opts)
			if err != nil {
				return usageError{err}
			}
			if dryRun == "client" {
				return printManifests(s.out, objs, output)
			}

			loading := clientcmd.NewDefaultClientConfigLoadingRules()
			loading.ExplicitPath = kubeconfig
			restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading,
				&clientcmd.ConfigOverrides{CurrentContext: kubecontext}).ClientConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			a, err := install.NewApplier(restCfg)
			if err != nil {
				return err
			}
			results, err := a.Apply(ctx, objs, install.ApplyOptions{DryRun: dryRun == "server"})
			if output == "json" {
				if werr := writeJSON(s.out, results); werr != nil && err == nil {
					err = werr
				}
			} else {
				suffix := ""
				if dryRun == "server" {
					suffix = " (server dry run)"
				}
				for _, r := range results {
					fmt.Fprintln(s.out, r.String()+suffix)
				}
			}
			if err != nil {
				return fmt.Errorf("install into %s: %w", restCfg.Host, err)
			}
			changed, unchecked := 0, 0
			for _, r := range results {
				if r.Action != install.Unchanged {
					changed++
				}
				if r.NotValidated {
					unchecked++
				}
			}
			switch {
			case dryRun == "server" && unchecked > 0:
				fmt.Fprintf(s.errOut, "The API server accepted the %d objects it could check; %d in namespaces that do not exist yet could not be checked. Nothing was stored (dry run).\n", len(results)-unchecked, unchecked)
			case dryRun == "server":
				fmt.Fprintf(s.errOut, "The API server accepted all %d objects; nothing was stored (dry run).\n", len(results))
			case changed == 0:
				fmt.Fprintf(s.errOut, "Nothing changed: the agent is installed in namespace %s as asked.\n", opts.Namespace)
			default:
				fmt.Fprintf(s.errOut, "Agent installed in namespace %s (%d of %d objects created or changed). It joins %s when its pod starts:\n  kubectl -n %s get pods -l app.kubernetes.io/name=%s\n",
					opts.Namespace, changed, len(results), opts.HubURLs[0], opts.Namespace, install.Name)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.HubURLs, "hub", nil, "the hub's agent endpoint, https://HOST:PORT (required); repeat it, or separate with commas, for several hub replicas")
	f.StringVar(&token, "join-token", "", "the one-time join token from \"flotilla cluster add\" (shows in this machine's process listing: prefer --join-token-file)")
	f.StringVar(&tokenFile, "join-token-file", "", "read the join token from this file, or - for standard input")
	f.StringVar(&kubeconfig, "kubeconfig", "", noKubeconfigs)
	f.StringVar(&kubecontext, "context", "", "the kubeconfig context to use (default: its current context)")
	f.StringVarP(&opts.Namespace, "namespace", "n", install.DefaultNamespace, "namespace the agent runs in (its inventories are always in "+install.InventoryNamespace+")")
	f.StringVar(&opts.Image, "image", "", "the agent's image (default "+defaultImage+"); the CLI's image, .../flotilla, runs as flotilla agent")
	f.BoolVar(&opts.PlatformAdmin, "platform-admin", false, "bind the agent to cluster-admin, so that releases of the platform project (which apply as the agent) may manage anything")
	f.StringVar(&opts.StateVolume, "state-volume", install.StatePVC, "the agent's state dir: pvc (a PersistentVolumeClaim) or emptydir (lost with the pod: the agent then needs a new join token)")
	f.StringVar(&opts.StateSize, "state-size", "2Gi", "size of the state dir's PersistentVolumeClaim")
	f.StringVar(&opts.StorageClass, "storage-class", "", "storage class of the state dir's PersistentVolumeClaim (default: the cluster's)")
	f.StringVar(&dryRun, "dry-run", "none", "client: print the manifests, apply nothing; server: have the API server validate them, store nothing")
	f.Lookup("dry-run").NoOptDefVal = "client"
	f.StringVarP(&output, "output", "o", "", "with --dry-run: yaml (default) or json; otherwise text (default) or json")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "give up applying after this long")
	return cmd
}

// printManifests writes objs as a YAML stream, or as a JSON List.
func printManifests(w io.Writer, objs []*unstructured.Unstructured, format string) error {
	if format == "json" {
		items := make([]any, len(objs))
		for i, o := range objs {
			items[i] = o.Object
		}
		return writeJSON(w, map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	}
	var buf bytes.Buffer
	for i, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return fmt.Errorf("%s: %w", o.GetName(), err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(data)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
