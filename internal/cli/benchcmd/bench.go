package benchcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/cli"
	"github.com/flotilla/flotilla/internal/cli/clikit"
	"github.com/flotilla/flotilla/internal/fleetsim"
)

// NewRootCommand builds the flotilla-bench command: the fleet-scale benchmarks, their hidden
// helper verbs, and the hub (from the flotilla CLI), which the benchmarks run as processes of
// this binary. It is a developer's tool: no image ships it.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	s := clikit.Streams{Out: out, ErrOut: errOut}
	root := clikit.Root(&cobra.Command{
		Use:   Name,
		Short: "Measure Flotilla at fleet scale with simulated clusters",
		Long: `Measure Flotilla at fleet scale. The spokes are simulated: each cluster is an in-memory
store, while the agents, the hub process, Git and mTLS on loopback are real.`,
		Args: cobra.NoArgs,
	}, out, errOut)
	root.AddCommand(newBenchFleetCommand(s), newBenchIdleCommand(s), newBenchColdCommand(s), newBenchPushControllerCommand(s), newBenchAgentHostCommand(s),
		cli.HubCommand(out, errOut), clikit.NewVersionCommand(s, Name))
	clikit.WithUsageErrors(root)
	return root
}

// Name is the benchmark binary's name.
const Name = "flotilla-bench"

// Run executes flotilla-bench with args (without the program name) and returns the exit code.
func Run(ctx context.Context, args []string, out, errOut io.Writer) int {
	root := NewRootCommand(out, errOut)
	root.SetArgs(args)
	return clikit.Exit(root.ExecuteContext(ctx), errOut, nil)
}

func newBenchFleetCommand(s clikit.Streams) *cobra.Command {
	var (
		opts    fleetsim.Options
		dir     string
		keep    bool
		profile string
		output  = clikit.NewChoice("table", "json")
		payload = clikit.NewChoice("text", "random")
		layout  = clikit.NewChoice(fleetsim.LayoutShared, fleetsim.LayoutPerCluster)
	)
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Simulate a fleet: real hub and agents, in-memory clusters, pull against a push baseline",
		Long: `Simulate a fleet and measure it. The command generates a fleet configuration and a local Git
source (RELEASES releases of OBJECTS ConfigMaps each, every release assigned to every
cluster), starts ` + "`flotilla hub`" + ` as its own process, registers CLUSTERS clusters and joins one real
agent per cluster in this process (join, watch, fetch, verify, unpack, render, diff, report),
each reconciling into an in-memory cluster that keeps object hashes and counts writes.

It measures two waves: the first sync, then a commit changing every object of every release.
Each wave ends when the hub's status API shows every assignment Ready at the commit. For each
wave it reports the time, the hub's CPU seconds and peak resident memory, the bytes each way
and the requests, counted at the agents' end of their connections.

With --push (the default) it then runs the push baseline on the same commits: a push controller
process renders every assignment per cluster and sends each object over HTTPS to that cluster's
simulated endpoint, and the report gives pull/push ratios and checks that both modes left
every cluster with the same objects. The spokes are simulated; see docs/simulator.md.

With --webhook it measures sync on push instead of the push baseline: after wave 2 it makes
--webhook-rounds commits with the source polled every --source-interval (each at a random
point of the interval), then raises the source's interval to an hour and makes as many
commits, each followed at once by a signed push to the hub's generic webhook. The report gives
each cluster's time from a commit until it wrote its last changed object, as p50 and p99 over
clusters x commits for each mode, and their ratio (docs/webhooks.md).

With --helm every release is one Helm chart (a Deployment, a Service and ConfigMaps from a
helpers file, OBJECTS templates, 20 unless --objects says otherwise) that the simulator serves
as a chart repository over TLS: the hub fetches it (Source.spec.helm) and packs it once, and
every agent renders it in-process with its cluster's own values (${cluster_name}, and a replica
count from the cluster's "replicas" label). Wave 2 publishes a new chart version that changes
every object. There is no push baseline in this mode (docs/helm.md).

With --layout per-cluster the source holds a directory per cluster and release,
clusters/<cluster>/<release>, whose kustomization reaches the shared base/<release> with the
ConfigMaps; each release's path is clusters/{{ .Cluster.Name }}/<release>. With per-path
artifacts each cluster downloads only its own directories and the base.`,
		Example: `  # A small fleet, with the push baseline, as a table
  flotilla-bench fleet --clusters 20 --releases 3 --objects 10

  # The argocd-agent scale test's shape, JSON for scripts
  flotilla-bench fleet --clusters 480 --releases 65 --objects 100 -o json > fleet.json

  # Sync on push: commit -> every cluster converged with a webhook, against polling
  flotilla-bench fleet --clusters 100 --webhook

  # A Helm chart shared by 100 clusters, each rendering it with its own values
  flotilla-bench fleet --helm --clusters 100

  # Per-cluster release paths (clusters/{{ .Cluster.Name }}/<release> reaching a shared base/)
  flotilla-bench fleet --clusters 100 --layout per-cluster

  # Incompressible payloads, agents reporting every second, no push baseline
  flotilla-bench fleet --payload random --report-interval 1s --push=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (runErr error) {
			ctx := cmd.Context()
			bin, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the flotilla binary: %w", err)
			}
			opts.Binary = bin
			cleanup, err := workDir(&dir, keep, s)
			if err != nil {
				return err
			}
			defer cleanup()
			opts.Dir = dir
			opts.Payload = payload.Value
			opts.Layout = layout.Value
			if opts.Helm && opts.Layout != fleetsim.LayoutShared {
				return clikit.UsageError{Err: fmt.Errorf("--helm renders charts: leave out --layout %s", opts.Layout)}
			}
			if opts.Webhook {
				if opts.Push && cmd.Flags().Changed("push") {
					return clikit.UsageError{Err: fmt.Errorf("--webhook compares with polling, not push: leave out --push")}
				}
				opts.Push = false
			}
			if opts.Helm {
				if opts.Webhook || (opts.Push && cmd.Flags().Changed("push")) {
					return clikit.UsageError{Err: fmt.Errorf("--helm has no push baseline or webhook mode: leave out --push and --webhook")}
				}
				opts.Push = false
				if !cmd.Flags().Changed("objects") {
					opts.Objects = 20 // templates in the chart
				}
			}
			opts.Logger = clikit.LoggerFrom(ctx)
			if profile != "" {
				f, err := os.Create(profile)
				if err != nil {
					return err
				}
				defer func() { // after StopCPUProfile: a profile that did not reach the disk fails the run
					if err := f.Close(); err != nil && runErr == nil {
						runErr = fmt.Errorf("--cpu-profile: %w", err)
					}
				}()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			rep, err := fleetsim.Run(ctx, opts)
			if err != nil {
				return err
			}
			if output.Value == "json" {
				return rep.WriteJSON(s.Out)
			}
			return rep.WriteTable(s.Out)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Clusters, "clusters", 20, "simulated clusters, one real agent each")
	f.IntVar(&opts.Releases, "releases", 3, "releases, each assigned to every cluster")
	f.IntVar(&opts.Objects, "objects", 10, "ConfigMaps per release")
	f.IntVar(&opts.ObjectSize, "object-size", 512, "approximate bytes per ConfigMap")
	f.Var(payload, "payload", "ConfigMap content: text (config-file-like, compressible) or random (hex, barely compressible)")
	f.Var(layout, "layout", "source layout: shared (every cluster renders releases/<release>) or per-cluster (clusters/<cluster>/<release>, a kustomization reaching base/<release>)")
	f.DurationVar(&opts.ReportInterval, "report-interval", 0, "agents' report (outbox flush) interval (default 5s)")
	f.DurationVar(&opts.HeartbeatInterval, "heartbeat-interval", 0, "agents' heartbeat interval (default 30s)")
	f.DurationVar(&opts.SourceInterval, "source-interval", 0, "how often the hub polls the source (default 2s)")
	f.DurationVar(&opts.PollInterval, "poll-interval", 0, "how often the hub's status API is read for the all-synced moment (default 2s)")
	f.DurationVar(&opts.Timeout, "timeout", 0, "bound for each wave (default 30m)")
	f.BoolVar(&opts.Push, "push", true, "also run the push baseline and compare")
	f.BoolVar(&opts.Webhook, "webhook", false, "after wave 2, measure each cluster's commit-to-converged time with a webhook (source interval 1h) against polling; no push baseline")
	f.BoolVar(&opts.Helm, "helm", false, "every release is one Helm chart the hub fetches from a chart repository the simulator serves, rendered by each agent with per-cluster values; no push baseline")
	f.IntVar(&opts.WebhookRounds, "webhook-rounds", 5, "with --webhook: commits measured in each mode")
	f.IntVar(&opts.PushWorkers, "push-workers", 16, "clusters the push controller syncs at once")
	f.StringArrayVar(&opts.HubArgs, "hub-arg", nil, "extra flag for the hub process, e.g. --hub-arg=--max-artifact-downloads=64 (repeatable)")
	f.StringVar(&dir, "dir", "", "work directory (default: a temporary directory, removed afterwards)")
	f.BoolVar(&keep, "keep", false, "keep the work directory")
	f.StringVar(&opts.HubProfile, "hub-profile", "", "write the hub's CPU profile, from the start of pull wave 1, to this file")
	f.DurationVar(&opts.HubProfileFor, "hub-profile-for", 30*time.Second, "how long --hub-profile records")
	f.StringVar(&profile, "cpu-profile", "", "write the simulator's own CPU profile (agents, push endpoints) to this file")
	f.VarP(output, "output", "o", "output format: table or json")
	return cmd
}

func newBenchIdleCommand(s clikit.Streams) *cobra.Command {
	var (
		opts   fleetsim.IdleOptions
		dir    string
		keep   bool
		output = clikit.NewChoice("table", "json")
	)
	cmd := &cobra.Command{
		Use:   "idle",
		Short: "Measure what an idle fleet of connected agents costs the hub, and a hub restart under it",
		Long: `Connect AGENTS real agents (in this process, one mTLS connection each) to a hub process, let
each apply one small release, then measure the hub while nothing changes: every agent keeps its
watch stream open and sends heartbeats. Reports the hub's CPU over the window (seconds and percent
of one core), its memory, and the traffic. With --restart the hub is then stopped for --down
and started again: the report gives the time until every agent is connected again, the most
connections opened in one second, and the restarted hub's peak memory. The spokes are simulated
(in-memory clusters); see docs/simulator.md.`,
		Example: `  # 10,000 idle agents for a minute, then a hub restart
  flotilla-bench idle --agents 10000 --window 1m --restart

  # A quick look
  flotilla-bench idle --agents 500 --window 20s -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd, s, &dir, keep, output.Value, func(ctx context.Context, bin, dir string) (benchReport, error) {
				opts.Binary, opts.Dir, opts.Logger = bin, dir, clikit.LoggerFrom(ctx)
				return fleetsim.RunIdle(ctx, opts)
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Agents, "agents", 10000, "connected agents")
	f.IntVar(&opts.Releases, "releases", 0, "one-object releases every agent applies before the window (default: none, agents only watch and heartbeat)")
	f.IntVar(&opts.AgentsPerProcess, "agents-per-process", 5000, "agents each agent-host process runs (each agent holds two file descriptors)")
	f.DurationVar(&opts.Window, "window", time.Minute, "idle window measured")
	f.BoolVar(&opts.Restart, "restart", false, "then restart the hub and measure the reconnection")
	f.DurationVar(&opts.Down, "down", 10*time.Second, "how long the hub stays down on --restart")
	f.DurationVar(&opts.HeartbeatInterval, "heartbeat-interval", 30*time.Second, "agents' heartbeat interval")
	f.DurationVar(&opts.Timeout, "timeout", 20*time.Minute, "bound for the first sync and for the reconnection")
	f.StringArrayVar(&opts.HubArgs, "hub-arg", nil, "extra flag for the hub process (repeatable)")
	f.StringVar(&opts.HubProfile, "hub-profile", "", "write the hub's CPU profile over the idle window to this file")
	f.StringVar(&dir, "dir", "", "work directory (default: a temporary directory, removed afterwards)")
	f.BoolVar(&keep, "keep", false, "keep the work directory")
	f.VarP(output, "output", "o", "output format: table or json")
	return cmd
}

func newBenchColdCommand(s clikit.Streams) *cobra.Command {
	var (
		opts   fleetsim.ColdOptions
		dir    string
		keep   bool
		output = clikit.NewChoice("table", "json")
	)
	cmd := &cobra.Command{
		Use:   "cold",
		Short: "Measure a cold start: every agent of a fleet starting within one second",
		Long: `Register and join AGENTS real agents (one small release each, in agent-host processes of
--agents-per-process agents), wait until the hub has scheduled all of them, then start every
agent within one second and measure until the hub's status API shows every assignment Ready at
the commit, or --timeout passes.

The report gives the join time (before the start), the time to converge, the hub's CPU and
peak resident memory, the requests the agents sent and the refusals they got (429 or 503, and
how many said when to come back with Retry-After), and the agents that gave up: those not Ready
when the run ended, and those whose run ended with an error.

With --replicas 2 --postgres URL the run creates a database of its own on that PostgreSQL
server (the role must be allowed to CREATE DATABASE; it is dropped afterwards), starts that
many hub replicas on it, and spreads the agents over them, each agent knowing every replica to
fail over to. The report then gives each replica's share: the agents that chose it first, the
agents connected to it at the end (its flotilla_hub_agents_connected), the artifact downloads
it served, the requests it answered, its CPU and its peak memory. The spokes are simulated
(in-memory clusters); see docs/simulator.md.`,
		Example: `  # 10,000 agents starting at once against one hub
  flotilla-bench cold --agents 10000

  # The same against two hub replicas on the PostgreSQL server of ` + "`make postgres`" + `
  flotilla-bench cold --agents 10000 --replicas 2 \
    --postgres 'postgres://flotilla@127.0.0.1:55432/postgres?sslmode=disable'

  # A quick look, as JSON, with the hub's CPU profile over the first 30 seconds
  flotilla-bench cold --agents 500 --hub-profile cold.pprof -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Replicas < 1 {
				return clikit.UsageError{Err: fmt.Errorf("--replicas %d: want 1 or more", opts.Replicas)}
			}
			if opts.Replicas > 1 && opts.Postgres == "" {
				return clikit.UsageError{Err: fmt.Errorf("--replicas %d: replicas share a PostgreSQL database: give --postgres postgres://USER@HOST:PORT/DATABASE", opts.Replicas)}
			}
			return runBench(cmd, s, &dir, keep, output.Value, func(ctx context.Context, bin, dir string) (benchReport, error) {
				opts.Binary, opts.Dir, opts.Logger = bin, dir, clikit.LoggerFrom(ctx)
				return fleetsim.RunCold(ctx, opts)
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Agents, "agents", 10000, "agents, one one-object release each")
	f.IntVar(&opts.Replicas, "replicas", 1, "hub replicas; more than one needs --postgres")
	f.StringVar(&opts.Postgres, "postgres", "", "PostgreSQL server URL where the run creates (and afterwards drops) a database of its own for the hub replicas; libpq's PG* variables fill in what it leaves out")
	f.IntVar(&opts.AgentsPerProcess, "agents-per-process", 5000, "agents each agent-host process runs (each agent holds two file descriptors)")
	f.IntVar(&opts.JoinConcurrency, "join-concurrency", 16, "agents registered and joined at once, before the start")
	f.DurationVar(&opts.Timeout, "timeout", 10*time.Minute, "bound for the joins and for the cold start: agents not Ready by then gave up")
	f.DurationVar(&opts.PollInterval, "poll-interval", 2*time.Second, "how often the hub's status API is read")
	f.DurationVar(&opts.HeartbeatInterval, "heartbeat-interval", 30*time.Second, "agents' heartbeat interval")
	f.StringArrayVar(&opts.HubArgs, "hub-arg", nil, "extra flag for every hub process, e.g. --hub-arg=--max-artifact-downloads=64 (repeatable)")
	f.StringVar(&opts.HubProfile, "hub-profile", "", "write the first replica's CPU profile, from the start, to this file")
	f.DurationVar(&opts.HubProfileFor, "hub-profile-for", 30*time.Second, "how long --hub-profile records")
	f.StringVar(&dir, "dir", "", "work directory (default: a temporary directory, removed afterwards)")
	f.BoolVar(&keep, "keep", false, "keep the work directory")
	f.VarP(output, "output", "o", "output format: table or json")
	return cmd
}

// workDir makes the run's directory: the one given, or a temporary one removed afterwards
// unless keep.
// benchReport is what a bench command prints.
type benchReport interface {
	WriteJSON(io.Writer) error
	WriteTable(io.Writer) error
}

// runBench runs a bench in its work directory (dir, or a temporary one that keep keeps) with
// the running binary as the hub's, and prints its report in format.
func runBench(cmd *cobra.Command, s clikit.Streams, dir *string, keep bool, format string,
	run func(ctx context.Context, bin, dir string) (benchReport, error)) error {
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the flotilla binary: %w", err)
	}
	cleanup, err := workDir(dir, keep, s)
	if err != nil {
		return err
	}
	defer cleanup()
	rep, err := run(cmd.Context(), bin, *dir)
	if err != nil {
		return err
	}
	if format == "json" {
		return rep.WriteJSON(s.Out)
	}
	return rep.WriteTable(s.Out)
}

func workDir(dir *string, keep bool, s clikit.Streams) (func(), error) {
	if *dir != "" {
		return func() {}, os.MkdirAll(*dir, 0o755)
	}
	d, err := os.MkdirTemp("", "flotilla-bench-")
	if err != nil {
		return nil, err
	}
	*dir = d
	if keep {
		fmt.Fprintf(s.ErrOut, "Work directory: %s\n", d)
		return func() {}, nil
	}
	return func() { os.RemoveAll(d) }, nil
}

// newBenchPushControllerCommand is the push baseline's hub side, started by "bench fleet".
func newBenchPushControllerCommand(s clikit.Streams) *cobra.Command {
	var specFile string
	cmd := &cobra.Command{
		Use:    "push-controller --spec FILE",
		Short:  "The push baseline's controller (started by flotilla-bench fleet)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var spec fleetsim.PushSpec
			if err := readSpec(specFile, &spec); err != nil {
				return err
			}
			return fleetsim.RunPushController(cmd.Context(), spec, cmd.InOrStdin(), s.Out)
		},
	}
	cmd.Flags().StringVar(&specFile, "spec", "", "push spec (JSON) written by flotilla-bench fleet")
	return cmd
}

// newBenchAgentHostCommand runs a share of "bench idle"'s agents, until its stdin closes.
func newBenchAgentHostCommand(s clikit.Streams) *cobra.Command {
	var specFile string
	cmd := &cobra.Command{
		Use:    "agent-host --spec FILE",
		Short:  "Run a share of a simulated fleet's agents (started by flotilla-bench idle and bench cold)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var spec fleetsim.AgentHostSpec
			if err := readSpec(specFile, &spec); err != nil {
				return err
			}
			// The runner says "start" on stdin (bench cold) and closes it to stop this host.
			return fleetsim.RunAgentHost(cmd.Context(), spec, cmd.InOrStdin(), s.Out)
		},
	}
	cmd.Flags().StringVar(&specFile, "spec", "", "agent host spec (JSON) written by flotilla-bench idle")
	return cmd
}

// readSpec decodes the JSON spec file that "bench fleet" or "bench idle" wrote for one of its
// helper processes.
func readSpec(file string, spec any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, spec); err != nil {
		return fmt.Errorf("spec %s: %w", file, err)
	}
	return nil
}
