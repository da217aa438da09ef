package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/render"
)

func newReconcileCommand(s streams) *cobra.Command {
	var (
		kubeconfig string
		path       string
		vars       []string
		opts       reconcile.Options
		format     = newChoice("text", "json")
	)
	cmd := &cobra.Command{
		Use:   "reconcile DIR --name NAME",
		Short: "Apply a directory to a cluster once, exactly as the agent does for one assignment",
		Long: `Render DIR (plain YAML/JSON, or kustomize when it has a kustomization.yaml), substitute
variables, and reconcile the result into the cluster with server-side apply (field manager
"flotilla"), exactly as the agent does for one assignment:

  - the whole set is validated with a server-side dry-run first; if the API server rejects
    any object, nothing is applied and every rejected object is named;
  - CRDs, namespaces and cluster RBAC are applied first, CRDs waited for until Established;
  - unchanged objects cost no write: a second run with the same input writes nothing;
  - the inventory (what NAME applied) is kept in the cluster, in namespace flotilla-system,
    and --prune deletes what left the set (except objects annotated flotilla.dev/prune: disabled);
  - changes made by hand (kubectl edit, patch, label, client-side apply) are drift:
    taken back, or with --self-heal=false only reported; fields written through the scale
    subresource (an HPA, kubectl scale) are left alone;
  - fields another server-side-apply manager owns, and objects another assignment holds,
    are conflicts: reported and left alone unless --force.

It prints one line per object (created, configured, unchanged, healed, drifted, conflict,
pruned), then drift, conflicts and health. The exit code is 1 on any failure or conflict.`,
		Example: `  # Apply ./deploy to the cluster of the current kubeconfig context
  flotilla reconcile ./deploy --name web

  # A kustomize overlay with variables, into a namespace created if missing, pruning what left
  flotilla reconcile ./repo --path apps/web/overlays/prod --name web-prod \
    --var region=eu-west-1 --namespace web --create-namespace --prune

  # Wait until everything is ready, and report drift without correcting it
  flotilla reconcile ./deploy --name web --wait --timeout 2m --self-heal=false

  # What would change, as JSON for scripts
  flotilla reconcile ./deploy --name web --dry-run -o json`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("the directory to render (the unpacked artifact)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Name == "" {
				return usageError{errors.New("--name is required: it names the inventory that records what was applied")}
			}
			varMap, err := parseVars(vars)
			if err != nil {
				return usageError{err}
			}
			loading := clientcmd.NewDefaultClientConfigLoadingRules()
			loading.ExplicitPath = kubeconfig
			clientCfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{})
			restCfg, err := clientCfg.ClientConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			if opts.Namespace == "" {
				// As kubectl: the context's namespace, else "default".
				opts.Namespace, _, _ = clientCfg.Namespace()
			}

			ctx := cmd.Context()
			objects, err := render.Render(ctx, render.Options{Root: args[0], Path: path, Vars: varMap})
			if err != nil {
				return err
			}
			r, err := reconcile.New(restCfg, reconcile.Config{}, loggerFrom(ctx))
			if err != nil {
				return err
			}
			if opts.Wait {
				fmt.Fprintf(s.errOut, "Applying %d object(s), then waiting up to %s for them to become ready...\n", len(objects), opts.Timeout)
			}
			res, err := r.Reconcile(ctx, objects, opts)
			if format.Value == "json" {
				if werr := writeJSON(s.out, res); werr != nil {
					return werr
				}
			} else {
				fmt.Fprint(s.out, res.String())
			}
			if err != nil {
				return err
			}
			if res.Failed() {
				return fmt.Errorf("assignment %q: %d conflict(s)", opts.Name, res.Count(reconcile.Conflict))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&opts.Name, "name", "", "assignment name: names the inventory of what was applied (required)")
	f.StringVar(&path, "path", "", "directory inside DIR to render (default: DIR itself)")
	f.StringArrayVar(&vars, "var", nil, "substitution variable k=v for ${k} in the manifests (repeatable)")
	f.StringVarP(&opts.Namespace, "namespace", "n", "", "namespace for namespaced objects that have none (default: the kubeconfig context's, else default)")
	f.BoolVar(&opts.CreateNamespace, "create-namespace", false, "create --namespace if it does not exist (it is never pruned)")
	f.BoolVar(&opts.Prune, "prune", false, "delete objects applied before under --name that left the set")
	f.BoolVar(&opts.Wait, "wait", false, "wait until every object is ready (kstatus Current), failed, or --timeout")
	f.DurationVar(&opts.Timeout, "timeout", 5*time.Minute, "how long --wait waits")
	f.BoolVar(&opts.SelfHeal, "self-heal", true, "take back changes made by hand; with --self-heal=false drift is only reported")
	f.BoolVar(&opts.DryRun, "dry-run", false, "validate with the API server and report what would change, writing nothing")
	f.BoolVar(&opts.Force, "force", false, "take fields owned by other field managers and objects held by other assignments")
	f.VarP(format, "output", "o", "output format: text or json")
	return cmd
}
