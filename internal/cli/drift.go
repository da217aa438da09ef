package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubapi"
)

func newDriftCommand(s streams) *cobra.Command {
	var (
		hf hubFlags
		f  hubapi.DriftFilter
	)
	format := newChoice("table", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "drift [--cluster C] [--release R]",
		Short: "List objects changed by hand across the fleet, with their field paths",
		Long: `List the objects each agent found changed by hand (kubectl edit, scale, patch, label, a
client-side apply) at its last drift check, with the field paths that differ from what the
release applies. STATE is "healed" when the agent took the change back (selfHeal: true,
the default) and "reported" when it only reported it (selfHeal: false). REPORTED is when
the agent's report was produced.`,
		Example: `  flotilla drift
  flotilla drift --cluster eu-prod-1
  flotilla drift --release baseline -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			v, err := c.Drift(cmd.Context(), f)
			if err != nil {
				return err
			}
			return printOut(s.out, format.value, v, func(w io.Writer) {
				if len(v.Objects) == 0 {
					fmt.Fprintln(w, "No drift reported.")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CLUSTER\tRELEASE\tNAMESPACE\tOBJECT\tPATHS\tSTATE\tREPORTED")
				for _, o := range v.Objects {
					state := "reported"
					if o.Healed {
						state = "healed"
					}
					ns := o.Namespace
					if ns == "" {
						ns = "-"
					}
					t := o.ReportedAt
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Cluster, o.Release, ns, o.Object, strings.Join(o.Paths, ","), state, ago(&t))
				}
				tw.Flush()
			})
		},
	}
	hf.bind(cmd)
	cmd.Flags().StringVar(&f.Cluster, "cluster", "", "only this cluster")
	cmd.Flags().StringVar(&f.Release, "release", "", "only this release")
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}
