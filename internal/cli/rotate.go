package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

func newClusterRotateCommand(s streams, hf *hubFlags) *cobra.Command {
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "rotate NAME",
		Short: "Revoke every certificate and unused join token of a cluster, keeping its history, and issue a new join token",
		Long: `Revoke every certificate the hub signed for the cluster and every join token of it not
used yet, for instance when an agent's state dir may have been copied. The agent is refused
from its next request on; open watch streams end. The cluster stays registered with its
labels, desired state, statuses and audit trail. To bring the agent back, run it with the
new join token printed here and an empty state dir (an agent with an identity in its state
dir does not join again); its releases' objects stay in the cluster meanwhile.`,
		Example: `  flotilla cluster rotate eu-prod-1
  flotilla cluster rotate eu-prod-1 -o json | jq -r .joinToken`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a cluster name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			v, err := c.RotateCluster(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, v, func(w io.Writer) {
				fmt.Fprintf(w, "Cluster %s: revoked %d certificate(s) and %d unused join token(s); its history is kept.\n"+
					"Its agent is refused until it joins again.\n\n"+
					"New join token (one use, expires %s):\n  %s\n\n"+
					"Re-join: stop the agent, empty its state dir (or give it a new one), and run:\n  %s\n",
					v.Name, v.RevokedCertificates, v.RevokedTokens, v.ExpiresAt.Local().Format(time.RFC3339), v.JoinToken, v.AgentCommand)
			})
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}
