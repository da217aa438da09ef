package agentcmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/cli/clikit"
	"github.com/flotilla/flotilla/internal/version"
)

// NewRunCommand is the command that runs the agent, with the offline-bundle subcommands:
// name is how users call it ("flotilla-agent", or "flotilla agent" in the CLI binary).
func NewRunCommand(s clikit.Streams, name string) *cobra.Command {
	var (
		opts        = agent.DefaultOptions()
		hubs        []string
		kubeconfig  string
		metricsAddr string
		tokenFile   string
	)
	cmd := &cobra.Command{
		Use:   name[strings.LastIndex(name, " ")+1:] + " --hub URL --join-token T --state-dir D",
		Short: "Run the agent: pull this cluster's desired state from the hub and reconcile it",
		Long: `Run the agent for one cluster. On first start it joins the hub with the one-time join token
(from "flotilla cluster add") and keeps its identity in --state-dir; later starts need no token.
It watches the hub for the cluster's desired state, reconciles every assignment with server-side
apply (prune, wait and self-heal as each release says, again every interval), and reports back.

When the hub is unreachable it keeps reconciling its last desired state from --state-dir, queues
its reports there, and reconnects with jittered backoff. With no --kubeconfig it uses the
in-cluster configuration (the agent's service account).`,
		Example: strings.ReplaceAll(`  # Outside the cluster, with a kubeconfig
  NAME --hub https://hub.example.com:8443 --join-token flt1.... \
    --kubeconfig ~/.kube/config --state-dir /var/lib/flotilla-agent

  # In the cluster (deploy/agent): in-cluster config, identity already in the state dir
  NAME --hub https://hub.example.com:8443 --state-dir /data

  # A hub of several replicas without a load balancer in front (docs/ha.md)
  NAME --hub https://hub-0.example.com:8443,https://hub-1.example.com:8443 --state-dir /data`, "NAME", name),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if opts.StateDir == "" {
				return clikit.UsageError{Err: fmt.Errorf("--state-dir is required")}
			}
			if len(hubs) > 0 {
				opts.HubURL, opts.HubURLs = hubs[0], hubs[1:]
			}
			var err error
			// In a cluster the token comes from a Secret mounted as a file (deploy/chart,
			// flotilla agent install), so that no process listing shows it.
			if tokenFile != "" {
				if opts.JoinToken != "" {
					return clikit.UsageError{Err: fmt.Errorf("give the join token once: --join-token or --join-token-file, not both")}
				}
				if opts.JoinToken, err = clikit.ReadJoinTokenFile(tokenFile, cmd.InOrStdin()); err != nil {
					return clikit.UsageError{Err: err}
				}
			}
			if kubeconfig != "" {
				opts.RESTConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
			} else {
				opts.RESTConfig, err = rest.InClusterConfig()
				if err != nil {
					err = fmt.Errorf("no --kubeconfig and not running in a cluster: %w", err)
				}
			}
			if err != nil {
				return err
			}
			opts.Logger = clikit.LoggerFrom(ctx)
			opts.Version = version.Get().Version
			if metricsAddr != "" {
				opts.Metrics = agent.NewMetrics()
				srv, err := clikit.ServeMetrics(ctx, metricsAddr, opts.Metrics.Handler())
				if err != nil {
					return err
				}
				defer func() { _ = srv.Close() }() // on the way out: nothing is left to serve
				fmt.Fprintf(s.ErrOut, "Metrics on http://%s/metrics\n", srv.Addr)
			}
			a, err := agent.New(ctx, opts)
			if err != nil {
				return err
			}
			defer func() { _ = a.Close() }() // shutting down: the state was committed as it went
			fmt.Fprintf(s.ErrOut, "Agent for cluster %q running; state in %s\n", a.Cluster(), opts.StateDir)
			return a.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&hubs, "hub", nil, "the hub's agent endpoint, https://HOST:PORT (required to join); repeat it, or separate with commas, for several hub replicas: the agent moves to the next when one cannot be reached")
	f.StringVar(&opts.JoinToken, "join-token", "", "one-time join token from \"flotilla cluster add\" (first start only)")
	f.StringVar(&tokenFile, "join-token-file", "", "read the join token from this file (- for standard input), e.g. a mounted Secret, so that no process listing shows it")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to reconcile (default: in-cluster config)")
	f.StringVar(&opts.StateDir, "state-dir", "", "directory for identity, desired state, outbox and artifacts (required)")
	// The defaults are the agent package's (opts starts as agent.DefaultOptions()), so --help
	// shows what an agent started without the flag really uses.
	f.DurationVar(&opts.HeartbeatInterval, "heartbeat-interval", opts.HeartbeatInterval, "time between heartbeats")
	f.DurationVar(&opts.ReportInterval, "report-interval", opts.ReportInterval, "time between outbox flushes when idle")
	f.DurationVar(&opts.MaxBackoff, "max-backoff", opts.MaxBackoff, "cap of the jittered exponential backoff between reconnects to the hub")
	f.IntVar(&opts.MaxOutbox, "max-outbox", opts.MaxOutbox, "reports kept while the hub is unreachable; beyond it, reports superseded by a newer one of the same release are compacted away (and counted)")
	f.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address, e.g. :9090 (default: off)")
	cmd.AddCommand(newImportCommand(s, name), newExportReportsCommand(s, name)) // offline.go
	return cmd
}
