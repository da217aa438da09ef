package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func newHubImportReportsCommand(s streams) *cobra.Command {
	var hf hubFlags
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "import-reports FILE",
		Short: "Ingest the reports an air-gapped agent wrote with \"flotilla agent export-reports\"",
		Long: `Send a reports file to the hub, which checks the agent's signature and its certificate (signed
by the hub's CA, not revoked, the cluster's) and ingests each report as if the agent had sent it:
once per (cluster, seq), so importing a file twice ingests it once. Reports the hub would refuse
online (a release its desired state no longer holds) are listed and dropped, as online.

The next "flotilla bundle export" of the cluster carries the highest seq now ingested, and the
agent drops those reports from its outbox when it imports that bundle (docs/airgap.md).
Needs a deployer of every project (or an admin); audited as reports.imported.`,
		Example: `  flotilla hub import-reports /media/usb/edge-7-reports.tar
  flotilla hub import-reports edge-7-reports.tar -o json`,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a reports file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return usageError{fmt.Errorf("reports file: %w", err)}
			}
			defer func() { _ = f.Close() }() // read only: Close has nothing to flush
			c, err := hf.client()
			if err != nil {
				return err
			}
			res, err := c.ImportReports(cmd.Context(), f)
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, res, func(w io.Writer) {
				fmt.Fprintf(w, "Cluster %s: %d report(s) in the file (seq %d to %d): %d ingested now, %d already ingested",
					res.Cluster, res.Reports, res.FirstSeq, res.LastSeq, res.Ingested, res.Duplicates)
				if len(res.Refused) > 0 {
					fmt.Fprintf(w, ", %d refused", len(res.Refused))
				}
				fmt.Fprintf(w, ".\nThe hub has the cluster's reports through seq %d; the next bundle tells the agent.\n", res.IngestedThrough)
				for _, r := range res.Refused {
					fmt.Fprintf(w, "  refused report %d: %s\n", r.Seq, r.Error)
				}
			})
		},
	}
	hf.bind(cmd)
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}
