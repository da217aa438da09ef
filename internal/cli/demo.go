package cli

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/demo"
	"github.com/flotilla/flotilla/internal/version"
)

func newDemoCommand(s streams) *cobra.Command {
	var (
		clusters int
		binDir   string
		dataDir  string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a whole fleet on this machine: a hub, local clusters with agents, and a Git fleet repository",
		Long: `Start a local fleet and keep it running until Ctrl-C:

  - local clusters: real kube-apiserver and etcd processes on loopback ports (no kubelet),
    labelled env=prod region=eu, env=prod region=us, env=staging region=eu, ...;
  - a hub with SQLite in --data-dir, reading an example fleet Git repository;
  - an agent per cluster, joined with a one-time token.

Once every release has converged it writes --data-dir/demo.env (FLOTILLA_HUB, FLOTILLA_TOKEN,
FLOTILLA_CA, FLEET_REPO and KUBECONFIG_<CLUSTER> per cluster) and prints what to try: edit the
fleet repository, commit, and watch the change converge with "flotilla status".

kube-apiserver and etcd come from "make kube-binaries" (bin/ at the repository root).`,
		Example: `  flotilla demo --data-dir ./demo
  flotilla demo --data-dir ./demo --clusters 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if clusters < 1 {
				return usageError{fmt.Errorf("--clusters must be at least 1, got %d", clusters)}
			}
			ctx := cmd.Context()
			if dataDir == "" {
				tmp, err := os.MkdirTemp("", "flotilla-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dataDir = tmp
			}
			// The hub's and agents' logs go to a file: the terminal is for the instructions.
			if err := os.MkdirAll(dataDir, 0o755); err != nil {
				return err
			}
			logPath := filepath.Join(dataDir, "demo.log")
			logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return err
			}
			defer func() { _ = logFile.Close() }() // best effort: the log is for a person reading it
			fmt.Fprintf(s.errOut, "Hub and agent logs: %s\n", logPath)
			start := time.Now()
			fleet, err := demo.Start(ctx, demo.Options{
				DataDir: dataDir, Clusters: clusters, BinDir: binDir, Out: s.errOut,
				Logger: slog.New(slog.NewTextHandler(logFile, nil)), Version: version.Get().Version,
			})
			if err != nil {
				return err
			}
			defer func() {
				fmt.Fprintln(s.errOut, "Stopping the demo fleet ...")
				fleet.Stop()
			}()
			abs, _ := filepath.Abs(dataDir)
			fmt.Fprintf(s.out, "\nThe fleet converged in %s. Everything is in %s:\n", time.Since(start).Round(100*time.Millisecond), abs)
			fmt.Fprintf(s.out, "  hub API         %s (token: %s)\n", fleet.Hub.APIURL(), filepath.Join(abs, "hub", "admin.token"))
			fmt.Fprintf(s.out, "  dashboard       %s (trust %s in the browser, see docs/dashboard.md)\n", fleet.DashboardURL(), fleet.Hub.CAPath())
			fmt.Fprintf(s.out, "  hub for agents  %s\n", fleet.Hub.AgentURL())
			fmt.Fprintf(s.out, "  fleet repo      %s (edit, commit; the hub polls every 5s)\n", fleet.RepoDir)
			for _, c := range fleet.Clusters {
				fmt.Fprintf(s.out, "  %-15s %s  kubeconfig %s\n", c.Name(), c.Host(), c.KubeconfigPath())
			}
			fmt.Fprintf(s.out, "\nTry, in another terminal (bin/ is the repository's bin directory; each step works again on a second run):\n")
			for _, step := range trySteps(fleet.EnvFile, len(fleet.Clusters)) {
				fmt.Fprintf(s.out, "  %s\n", step)
			}
			fmt.Fprintf(s.out, "\nPress Ctrl-C to stop.\n")
			select {
			case <-ctx.Done():
				return nil
			case err := <-fleet.Errors():
				return err
			}
		},
	}
	cmd.Flags().IntVar(&clusters, "clusters", 3, "number of local clusters")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory for everything the demo creates, kept after exit (default: a temporary directory, removed on exit)")
	cmd.Flags().StringVar(&binDir, "bin-dir", "", "directory holding kube-apiserver and etcd (default: bin/ of the repository; env FLOTILLA_BIN_DIR)")
	return cmd
}

// trySteps are the commands the demo suggests, in order; each one works again when the demo
// is run a second time on the same data dir.
func trySteps(envFile string, clusters int) []string {
	steps := []string{
		"source " + envFile,
		"bin/flotilla status",
		demo.TryCommit,
		"bin/flotilla status --watch   # the EU clusters move to the new revision within seconds; Ctrl-C to stop",
		`bin/kubectl --kubeconfig "$KUBECONFIG_CLUSTER_1" -n platform-system get configmap platform-settings -o yaml`,
	}
	if clusters >= 2 {
		steps = append(steps, "bin/flotilla cluster label cluster-2 env=staging    # greeter leaves cluster-2, staging-tools arrives")
	}
	return append(steps, "bin/flotilla skew; bin/flotilla drift               # who runs which revision; what was changed by hand")
}
