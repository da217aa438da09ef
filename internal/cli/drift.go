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
		Long: `List the objects each agent found drifted at its last drift check, with the field paths
that differ from what the release applies.

Drift is a change, since flotilla last applied an object with the same desired content, to
what flotilla applies:
  - a field the release sets now has another value live, or is gone: kubectl edit, scale,
    patch, set image, a client-side kubectl apply, or kubectl label/annotate --overwrite of a
    label or annotation the release sets;
  - the whole object was deleted by hand: it shows with the path (deleted).
Not drift:
  - labels, annotations and fields the release does not set, added by people or other
    controllers (kubectl label of a new key, an injected sidecar, defaults the API server
    fills in);
  - fields another server-side-apply field manager owns: those are conflicts (see flotilla
    status and cluster show), left alone, never fought over;
  - status, and metadata that changes at every write (resourceVersion, managedFields, ...);
  - a new revision of the release: that is a change, applied as such.

STATE is "healed" when the agent took the change back, re-creating a deleted object
(selfHeal: true, the default) and "reported" when it only reported it (selfHeal: false).
REPORTED is when the agent's report was produced.`,
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
