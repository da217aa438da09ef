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
		Example: `  flotilla get clusters
  flotilla get releases -o json`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"clusters", "releases", "sources"},
		RunE: func(cmd *cobra.Command, args []string) error {
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
				return printOut(s.out, format.value, v, func(w io.Writer) {
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
				return printOut(s.out, format.value, v, func(w io.Writer) {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tSOURCE\tPATH\tCLUSTERS")
					for _, r := range v {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Source, r.Path, strings.Join(r.Clusters, ","))
					}
					tw.Flush()
				})
			case "sources", "source":
				v, err := c.Sources(ctx)
				if err != nil {
					return err
				}
				return printOut(s.out, format.value, v, func(w io.Writer) {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tURL\tREVISION\tERROR")
					for _, src := range v {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", src.Name, src.URL, src.Revision, src.Error)
					}
					tw.Flush()
				})
			}
			return usageError{fmt.Errorf("unknown kind %q: want clusters, releases or sources", args[0])}
		},
	}
	hf.bind(cmd)
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

func newStatusCommand(s streams) *cobra.Command {
	var hf hubFlags
	format := newChoice("table", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "status [RELEASE]",
		Short: "Show the fleet: every release on every cluster, desired and applied revision, phase, health, drift",
		Long: `Show the release x cluster matrix: the revision each cluster should run and the one it
reported, its phase (Pending, Progressing, Ready, Failed), health, drift and when its agent was
last seen. Phase is Ready once the desired revision is applied (and healthy, for releases with
wait: true). -o json is a stable contract for scripts: an object with an "assignments" array.`,
		Example: `  flotilla status
  flotilla status baseline
  flotilla status -o json | jq '.assignments[] | select(.phase != "Ready")'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			v, err := c.Status(cmd.Context())
			if err != nil {
				return err
			}
			if len(args) == 1 {
				kept := v.Assignments[:0]
				for _, a := range v.Assignments {
					if a.Release == args[0] {
						kept = append(kept, a)
					}
				}
				v.Assignments = kept
			}
			return printOut(s.out, format.value, v, func(w io.Writer) {
				if v.Fleet.Error != "" {
					fmt.Fprintf(w, "Fleet configuration error (revision %s stays in force): %s\n\n", v.Fleet.Revision, v.Fleet.Error)
				}
				for _, src := range v.Sources {
					if src.Error != "" {
						fmt.Fprintf(w, "Source %s: %s\n", src.Name, src.Error)
					}
				}
				for _, p := range v.Problems {
					fmt.Fprintf(w, "Problem: %s\n", p)
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RELEASE\tCLUSTER\tDESIRED\tAPPLIED\tPHASE\tHEALTH\tDRIFT\tLAST SEEN\tERROR")
				for _, a := range v.Assignments {
					drift := ""
					if a.Drifted {
						drift = "drifted"
					}
					seen := ago(a.LastSeen)
					if !a.Reachable && a.LastSeen != nil {
						seen += " (unreachable)"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Release, a.Cluster, short(a.DesiredRevision), short(a.AppliedRevision), a.Phase, a.Health, drift, seen, a.Error)
				}
				tw.Flush()
			})
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
