package cli

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/localcluster"
)

func newDemoCommand(s streams) *cobra.Command {
	var (
		clusters int
		binDir   string
		dir      string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a local fleet of real Kubernetes clusters on this machine",
		Long: `Start a local fleet: real kube-apiserver and etcd processes on loopback ports, one pair per
cluster, each with its own TLS certificates, admin credential and kubeconfig file.

The binaries come from "make kube-binaries" (bin/ at the repository root). The fleet runs
until you press Ctrl-C; then every process is stopped and the data removed (unless --dir
was given). The hub and agents join the demo as they are built.`,
		Example: `  # Two clusters; use the printed kubeconfig with kubectl or any client
  flotilla demo --clusters 2

  # Keep the clusters' data, certificates and logs in ./demo-data
  flotilla demo --dir ./demo-data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if clusters < 1 {
				return usageError{fmt.Errorf("--clusters must be at least 1, got %d", clusters)}
			}
			ctx := cmd.Context()
			opts := make([]localcluster.Options, clusters)
			for i := range opts {
				opts[i] = localcluster.Options{Name: fmt.Sprintf("cluster-%d", i+1), BinDir: binDir}
				if dir != "" {
					opts[i].Dir = filepath.Join(dir, opts[i].Name)
				}
			}
			fmt.Fprintf(s.errOut, "Starting %d local cluster(s) (etcd + kube-apiserver each)...\n", clusters)
			start := time.Now()
			fleet, err := localcluster.StartAll(ctx, opts)
			if err != nil {
				return err
			}
			defer func() {
				fmt.Fprintln(s.errOut, "Stopping the local fleet...")
				if err := localcluster.StopAll(fleet); err != nil {
					fmt.Fprintln(s.errOut, "warning:", err)
				}
			}()
			fmt.Fprintf(s.errOut, "Ready in %s.\n\n", time.Since(start).Round(100*time.Millisecond))
			for _, c := range fleet {
				fmt.Fprintf(s.out, "%-12s %s  kubeconfig: %s\n", c.Name(), c.Host(), c.KubeconfigPath())
			}
			if len(fleet) > 0 {
				fmt.Fprintf(s.out, "\nTry: kubectl --kubeconfig %s get namespaces\n", fleet[0].KubeconfigPath())
			}
			fmt.Fprintln(s.errOut, "\nPress Ctrl-C to stop.")
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().IntVar(&clusters, "clusters", 2, "number of local clusters to start")
	cmd.Flags().StringVar(&binDir, "bin-dir", "", "directory holding kube-apiserver and etcd (default: bin/ of the repository, found from the working directory; env "+localcluster.BinDirEnv+")")
	cmd.Flags().StringVar(&dir, "dir", "", "keep each cluster's data, certificates, logs and kubeconfig under this directory (default: temporary, removed on exit)")
	return cmd
}
