package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func newClusterCommand(s streams) *cobra.Command {
	var hf hubFlags
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Register, label and remove clusters",
		Example: `  flotilla cluster add eu-prod-1 -l env=prod -l region=eu
  flotilla cluster label eu-prod-1 tier=gold region-
  flotilla cluster show eu-prod-1
  flotilla cluster rotate eu-prod-1
  flotilla cluster suspend eu-prod-1 --reason "node pool upgrade"
  flotilla cluster resume eu-prod-1
  flotilla cluster remove eu-prod-1`,
	}
	hf.bind(cmd)
	cmd.AddCommand(newClusterAddCommand(s, &hf), newClusterTokenCommand(s, &hf), newClusterLabelCommand(s, &hf),
		newClusterRemoveCommand(s, &hf), newClusterShowCommand(s, &hf), newClusterRotateCommand(s, &hf))
	cmd.AddCommand(newClusterSuspendCommand(s, &hf), newClusterResumeCommand(s, &hf))
	return cmd
}

func parseLabels(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: want key=value", p)
		}
		out[k] = v
	}
	return out, nil
}

func printJoin(s streams, format string, j hubclient.JoinView) error {
	return printOut(s.out, format, j, func(w io.Writer) {
		fmt.Fprintf(w, "Cluster %s (labels %s).\nJoin token (one use, expires %s):\n  %s\n\nRun the agent with:\n  %s\n",
			j.Name, labelString(j.Labels), j.ExpiresAt.Local().Format(time.RFC3339), j.JoinToken, j.AgentCommand)
	})
}

func newClusterAddCommand(s streams, hf *hubFlags) *cobra.Command {
	var labels []string
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "add NAME [-l key=value ...]",
		Short: "Register a cluster and print its one-time join token and agent command",
		Long: `Register a cluster. The join token it prints works once, expires (24h by default), is bound
to this cluster name and pins the hub's CA, so an agent using it cannot be tricked into
joining another hub.`,
		Example: `  flotilla cluster add eu-prod-1 -l env=prod -l region=eu
  flotilla cluster add lab -o json | jq -r .joinToken`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a cluster name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := parseLabels(labels)
			if err != nil {
				return usageError{err}
			}
			c, err := hf.client()
			if err != nil {
				return err
			}
			j, err := c.AddCluster(cmd.Context(), args[0], l)
			if err != nil {
				return err
			}
			return printJoin(s, format.Value, j)
		},
	}
	cmd.Flags().StringArrayVarP(&labels, "label", "l", nil, "label key=value (repeatable)")
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

func newClusterTokenCommand(s streams, hf *hubFlags) *cobra.Command {
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:         "token NAME",
		Short:       "Issue a new join token for a registered cluster (an agent that lost its state dir re-joins with it); earlier unused tokens of the cluster stop working",
		Example:     `  flotilla cluster token eu-prod-1`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a cluster name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			j, err := c.NewJoinToken(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJoin(s, format.Value, j)
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

func newClusterLabelCommand(s streams, hf *hubFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "label NAME key=value... key-...",
		Short: "Set or remove labels; releases move onto or off the cluster accordingly",
		Example: `  flotilla cluster label eu-prod-1 env=staging
  flotilla cluster label eu-prod-1 tier-`,
		Args:        cobra.MinimumNArgs(2),
		Annotations: argsNamed("a cluster name and at least one label change (key=value, or key- to remove)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			changes := map[string]*string{}
			for _, a := range args[1:] {
				if k, ok := strings.CutSuffix(a, "-"); ok && !strings.Contains(a, "=") {
					changes[k] = nil
					continue
				}
				k, v, ok := strings.Cut(a, "=")
				if !ok || k == "" {
					return usageError{fmt.Errorf("label %q: want key=value, or key- to remove", a)}
				}
				changes[k] = &v
			}
			c, err := hf.client()
			if err != nil {
				return err
			}
			v, err := c.LabelCluster(cmd.Context(), args[0], changes)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "cluster/%s labelled: %s\n", v.Name, labelString(v.Labels))
			return nil
		},
	}
	return cmd
}

func newClusterRemoveCommand(s streams, hf *hubFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a cluster; its agent certificate is revoked at once",
		Long: `Remove a cluster from the hub. Its certificates are revoked and its open connections closed
at once. Objects already applied in the cluster are left in place.`,
		Example:     `  flotilla cluster remove eu-prod-1`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a cluster name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			if err := c.RemoveCluster(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "cluster/%s removed\n", args[0])
			return nil
		},
	}
}

func newClusterShowCommand(s streams, hf *hubFlags) *cobra.Command {
	format := newChoice("table", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show one cluster: last seen, agent version, outbox depth, conditions, assignments",
		Long: `Show one cluster: labels, when its agent was last seen and which version it runs, how many
reports wait in the agent's outbox (from its last heartbeat to this hub), how many reports
were ingested or compacted away, its conditions (Reachable, Converged, Drifted, Failed,
Conflicted, each with a reason and message) and every assignment with its phase and revisions.`,
		Example: `  flotilla cluster show eu-prod-1
  flotilla cluster show eu-prod-1 -o json | jq '.conditions[] | select(.status == "True")'`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a cluster name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			v, err := c.Cluster(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, v, func(w io.Writer) { printCluster(w, v) })
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

func printCluster(w io.Writer, v hubclient.ClusterView) {
	outbox := "unknown (no heartbeat since the hub started)"
	if v.OutboxDepth != nil {
		outbox = fmt.Sprintf("%d reports waiting", *v.OutboxDepth)
	}
	version := v.AgentVersion
	if version == "" {
		version = "-"
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\nLabels:\t%s\nLast seen:\t%s\nReachable:\t%v\nAgent version:\t%s\nOutbox:\t%s\nGeneration:\t%d\nReports:\t%d ingested, %d compacted by the agent's outbox\n",
		v.Name, labelString(v.Labels), ago(v.LastSeen), v.Reachable, version, outbox, v.Generation, v.ReportsIngested, v.ReportsCompacted)
	fmt.Fprintf(tw, "Age recipient:\t%s\n", orDash(v.AgeRecipient)) // flotilla secret encrypt encrypts to it
	for _, p := range slices.Sorted(maps.Keys(v.ProjectAgeRecipients)) {
		fmt.Fprintf(tw, "Age recipient (project %s):\t%s\n", p, v.ProjectAgeRecipients[p]) // --project P encrypts to it
	}
	tw.Flush()

	fmt.Fprintln(w, "\nConditions:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range v.Conditions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nAssignments:")
	if len(v.Status) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  RELEASE\tDESIRED\tAPPLIED\tPHASE\tHEALTH\tDRIFT\tCONFLICTS\tOBJECTS\tERROR")
	for _, a := range v.Status {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", a.Release, short(a.DesiredRevision), orDash(short(a.AppliedRevision)),
			phaseText(a), orDash(a.Health), driftText(a.Drifted), a.Conflicts, a.Objects, a.Error)
	}
	tw.Flush()
	printHeldBack(w, v.Status, true)
}

func ago(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return time.Since(*t).Round(time.Second).String() + " ago"
}
