package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func newSyncCommand(s streams) *cobra.Command {
	var (
		hf  hubFlags
		req hubclient.SyncRequest
	)
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "sync [RELEASE] [--cluster C] [--override --reason TEXT]",
		Short: "Make the agents of a release (or of every release) reconcile now",
		Long: `Ask the agents of RELEASE, or of every release without one, to reconcile now rather than at
their next interval. The request reaches each agent through the watch it already holds; each
agent acts on it once. It is recorded in the audit trail (sync.requested) with who asked.

--cluster limits the request to one cluster.

--override lets this one sync pass the windows and freezes that hold the release back: the
pending revision is applied once, on the clusters the request names, and the gates stay in
force for everything after. It needs --reason, and is recorded as sync.override.

A sync of one release needs the deployer role in its project; a sync of every release, the
deployer role in every project. A request an agent has not acted on within 10 minutes
expires.`,
		Example: `  # Reconcile release web on every cluster it is assigned to, now
  flotilla sync web

  # Only on one cluster
  flotilla sync web --cluster eu-west-1

  # Land web's held revision on one cluster through a freeze, once, on the record
  flotilla sync web --cluster eu-west-1 --override --reason "INC-4711: hotfix for the login outage"

  # Every release on every cluster
  flotilla sync`,
		Args:        cobra.MaximumNArgs(1),
		Annotations: argsNamed("at most one release name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.Override && req.Reason == "" {
				return usageError{errors.New("--override needs --reason: overriding a window or freeze is recorded in the audit trail with why")}
			}
			c, err := hf.client()
			if err != nil {
				return err
			}
			release := ""
			if len(args) == 1 {
				release = args[0]
			}
			v, err := c.Sync(cmd.Context(), release, req)
			if err != nil {
				return fmt.Errorf("sync %s: %w", syncTarget(release, req.Cluster), err)
			}
			return printOut(s.out, format.Value, v, func(w io.Writer) {
				what := "Sync"
				if v.Override {
					what = "Sync with override"
				}
				fmt.Fprintf(w, "%s %s requested for %s by %s; it expires at %s unless every agent has acted on it.\n",
					what, v.ID, syncTarget(v.Release, v.Cluster), v.Actor, v.Expires.UTC().Format("15:04:05 UTC"))
			})
		},
	}
	hf.bind(cmd)
	f := cmd.Flags()
	f.StringVar(&req.Cluster, "cluster", "", "only this cluster (default: every cluster the release is assigned to)")
	f.BoolVar(&req.Override, "override", false, "pass the windows and freezes that hold the release back, for this one sync (needs --reason; audited)")
	f.StringVar(&req.Reason, "reason", "", "why: recorded in the audit trail (required with --override)")
	f.VarP(format, "output", "o", "output format")
	return cmd
}

// syncTarget names what a sync covers: "release web on cluster c1", "every release on every
// cluster".
func syncTarget(release, cluster string) string {
	r, c := "every release", "every cluster"
	if release != "" {
		r = "release " + release
	}
	if cluster != "" {
		c = "cluster " + cluster
	}
	return r + " on " + c
}
