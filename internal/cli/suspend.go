package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func newClusterSuspendCommand(s streams, hf *hubFlags) *cobra.Command {
	var reason string
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "suspend NAME [--reason TEXT]",
		Short: "Stop new revisions on a cluster until resume (maintenance)",
		Long: `Suspend a cluster: no new revision of any release lands on it until flotilla cluster resume.
What runs stays running, and drift is still corrected. Its agent shows it in status, even while
the hub is unreachable: "Waiting: cluster suspended by token:alice: node pool upgrade".

To stop one release everywhere instead, set spec.suspend: true on the Release; to stop new
revisions on many clusters at once, use flotilla freeze --selector. Suspending a cluster needs
a deployer of every project, and is recorded in the audit trail. A cluster already suspended
stays as it was (the first reason and actor are kept).`,
		Example: `  flotilla cluster suspend eu-prod-1 --reason "node pool upgrade"
  flotilla cluster resume eu-prod-1`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a cluster name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			v, err := c.SuspendCluster(cmd.Context(), args[0], reason)
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, v, func(w io.Writer) {
				what := "suspended"
				if !v.Changed {
					what = "already suspended"
				}
				fmt.Fprintf(w, "Cluster %s %s%s.\nResume it with: flotilla cluster resume %s\n", v.Cluster, what, suspensionBy(v), v.Cluster)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, shown in status and recorded in the audit trail")
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

func newClusterResumeCommand(s streams, hf *hubFlags) *cobra.Command {
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "resume NAME",
		Short: "Lift a cluster's suspension: pending revisions land at once",
		Long: `Resume a suspended cluster. Its agent applies what the suspension held back as soon as it gets
the change, unless a window or freeze still holds it. Recorded in the audit trail.`,
		Example:     `  flotilla cluster resume eu-prod-1`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a cluster name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			v, err := c.ResumeCluster(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, v, func(w io.Writer) {
				if v.Changed {
					fmt.Fprintf(w, "Cluster %s resumed.\n", v.Cluster)
				} else {
					fmt.Fprintf(w, "Cluster %s was not suspended.\n", v.Cluster)
				}
			})
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

// suspensionBy says who suspended the cluster, when and why.
func suspensionBy(v hubclient.SuspensionView) string {
	var out string
	if v.Actor != "" {
		out += " by " + v.Actor
	}
	if v.Since != nil {
		out += " since " + v.Since.Local().Format(time.RFC3339)
	}
	if v.Reason != "" {
		out += ": " + v.Reason
	}
	return out
}
