package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newGetCommand(s streams) *cobra.Command {
	var hf hubFlags
	format := newChoice("table", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "get clusters|releases|sources",
		Short: "List clusters, releases or sources",
		Long: `List clusters (labels, reachability, last seen, desired-state generation, number of
assignments), releases (source, path, namespace, number of clusters assigned; -o json names
them) or sources (URL, last resolved revision, last poll error).`,
		Example: `  flotilla get clusters
  flotilla get releases -o json | jq -r '.[] | "\(.name): \(.clusters | length)"'
  flotilla get sources`,
		Args:        cobra.ExactArgs(1),
		ValidArgs:   []string{"clusters", "releases", "sources"},
		Annotations: argsNamed("a kind: clusters, releases or sources"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch args[0] {
			case "clusters", "cluster", "releases", "release", "sources", "source":
			default:
				return usageError{fmt.Errorf("unknown kind %q: want clusters, releases or sources", args[0])}
			}
			c, err := hf.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			switch args[0] {
			case "clusters", "cluster":
				v, err := c.Clusters(ctx)
				if err != nil {
					return err
				}
				return printOut(s.out, format.Value, v, func(w io.Writer) {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tLABELS\tREACHABLE\tLAST SEEN\tGENERATION\tASSIGNMENTS")
					for _, cl := range v {
						fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%d\t%d\n", cl.Name, labelString(cl.Labels), cl.Reachable, ago(cl.LastSeen), cl.Generation, len(cl.Assignments))
					}
					tw.Flush()
				})
			case "releases", "release":
				v, err := c.Releases(ctx)
				if err != nil {
					return err
				}
				return printOut(s.out, format.Value, v, func(w io.Writer) {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					// A count, not the names: a release on 1,000 clusters must stay one line
					// (-o json lists them).
					fmt.Fprintln(tw, "NAME\tSOURCE\tPATH\tNAMESPACE\tCLUSTERS")
					for _, r := range v {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", r.Name, r.Source, r.Path, r.Namespace, len(r.Clusters))
					}
					tw.Flush()
				})
			case "sources", "source":
				v, err := c.Sources(ctx)
				if err != nil {
					return err
				}
				return printOut(s.out, format.Value, v, func(w io.Writer) {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tURL\tREVISION\tERROR")
					for _, src := range v {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", src.Name, src.URL, src.Revision, src.Error)
					}
					tw.Flush()
				})
			}
			return nil
		},
	}
	hf.bind(cmd)
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

// short abbreviates a revision for tables: "main@sha1:0123456789ab..." keeps its first 12
// hex digits.
func short(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 && len(rev)-i > 13 {
		return rev[:i+13]
	}
	if len(rev) > 12 && !strings.ContainsAny(rev, "@:") {
		return rev[:12]
	}
	return rev
}
