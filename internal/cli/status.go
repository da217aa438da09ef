package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubapi"
)

func newStatusCommand(s streams) *cobra.Command {
	var (
		hf      hubFlags
		cluster string
	)
	format := newChoice("table", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "status [RELEASE] [--cluster C]",
		Short: "Show the fleet: per release, how many clusters are Ready, progressing, failed, drifted, unreachable",
		Long: `Show the fleet's status.

Without arguments: one line per release counting its clusters by phase. READY clusters run
the desired revision (and are healthy, for releases with wait: true); PROGRESSING ones have
not applied it yet; PENDING ones have not reported; FAILED ones failed to apply it;
UNREACHABLE ones have not been heard from within the hub's --unreachable-after (2m by
default), whatever they reported last. DRIFTED and CONFLICTED count, among them, those whose
last report found objects changed by hand or fields owned by someone else.

With RELEASE, --cluster or both: the matrix of those assignments, one line per release on a
cluster: desired and applied revision, phase, health, drift, conflicts, when its agent was
last seen.

-o json is a stable contract for scripts: an object with a "releases" array (the counts) and
an "assignments" array (the matrix; the hub filters it by RELEASE and --cluster).`,
		Example: `  flotilla status
  flotilla status baseline
  flotilla status --cluster eu-prod-1
  flotilla status -o json | jq '.assignments[] | select(.phase != "Ready")'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			f := hubapi.StatusFilter{Cluster: cluster}
			if len(args) == 1 {
				f.Release = args[0]
			}
			matrix := f != (hubapi.StatusFilter{})
			// The counts table needs no assignments: at 1,000 clusters x 20 releases that
			// is 14 MB of JSON the hub need not send (-o json keeps the whole contract).
			f.SummaryOnly = !matrix && format.value == "table"
			v, err := c.FilteredStatus(cmd.Context(), f)
			if err != nil {
				return err
			}
			return printOut(s.out, format.value, v, func(w io.Writer) {
				printStatusHeader(w, v)
				if !matrix {
					printReleaseSummaries(w, v.Releases)
					return
				}
				printMatrix(w, v, f)
			})
		},
	}
	hf.bind(cmd)
	cmd.Flags().StringVar(&cluster, "cluster", "", "show only this cluster's assignments")
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

// printStatusHeader prints what is wrong above the table: a rejected fleet configuration,
// failing sources, scheduling problems.
func printStatusHeader(w io.Writer, v hubapi.StatusView) {
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
}

func printReleaseSummaries(w io.Writer, rs []hubapi.ReleaseSummary) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "No release is assigned to any cluster.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RELEASE\tDESIRED\tCLUSTERS\tREADY\tPROGRESSING\tPENDING\tFAILED\tUNREACHABLE\tDRIFTED\tCONFLICTED")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", r.Release, short(r.DesiredRevision), r.Clusters,
			r.Ready, r.Progressing, r.Pending, r.Failed, r.Unreachable, r.Drifted, r.Conflicted)
	}
	tw.Flush()
}

// printMatrix prints one line per assignment; the release column is left out when the
// view is of one release.
func printMatrix(w io.Writer, v hubapi.StatusView, f hubapi.StatusFilter) {
	if f.Release != "" {
		for _, r := range v.Releases {
			fmt.Fprintf(w, "Release %s: %d of %d clusters Ready on %s\n\n", r.Release, r.Ready, r.Clusters, short(r.DesiredRevision))
		}
	}
	if len(v.Assignments) == 0 {
		fmt.Fprintln(w, "No assignments.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "CLUSTER\tDESIRED\tAPPLIED\tPHASE\tHEALTH\tDRIFT\tCONFLICTS\tLAST SEEN\tERROR"
	if f.Release == "" {
		head = "RELEASE\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, a := range v.Assignments {
		if f.Release == "" {
			fmt.Fprintf(tw, "%s\t", a.Release)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", a.Cluster, short(a.DesiredRevision), short(a.AppliedRevision),
			phaseText(a), a.Health, driftText(a.Drifted), a.Conflicts, ago(a.LastSeen), a.Error)
	}
	tw.Flush()
}

// phaseText shows an unreachable cluster's last reported phase beside it.
func phaseText(a hubapi.AssignmentView) string {
	if a.Phase == hubapi.PhaseUnreachable && a.ReportedPhase != "" {
		return string(a.Phase) + " (last " + string(a.ReportedPhase) + ")"
	}
	return string(a.Phase)
}

func driftText(drifted bool) string {
	if drifted {
		return "drifted"
	}
	return "-"
}
