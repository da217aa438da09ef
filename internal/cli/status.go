package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func newStatusCommand(s streams) *cobra.Command {
	var (
		hf       hubFlags
		cluster  string
		watch    bool
		interval time.Duration
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
last seen. APPLIED is "-" while nothing of any revision was applied, and when the agent
failed before applying anything of the revision it tried (download, render, validation);
HEALTH is the kstatus result (Current, InProgress, Failed) or "-" for releases without
wait: true and before the first report. PHASE Waiting means something holds the release back
on the cluster; below the table a line says what (Waiting: window "business-hours" opens
22:00 Europe/Berlin), and where the release's rollout holds a cluster at an earlier revision
(Rollout: wave eu waits for canary). The counts table counts Waiting among PROGRESSING.

When the newest fleet configuration is rejected, its error comes first, naming each file
in the fleet repository at the commit and the line (fleet/releases.yaml@272e309 line 38);
the last valid configuration stays in force. If that commit's manifests roll out anyway,
through a source in the same repository, a sentence says so.

--watch (-w) prints the table, then, like kubectl get -w, the lines that change as they
change (without LAST SEEN, which changes at every heartbeat), asking the hub every
--interval, until Ctrl-C.

-o json is a stable contract for scripts: an object with a "releases" array (the counts) and
an "assignments" array (the matrix; the hub filters it by RELEASE and --cluster).`,
		Example: `  flotilla status
  flotilla status baseline
  flotilla status --cluster eu-prod-1
  flotilla status baseline --watch
  flotilla status -o json | jq '.assignments[] | select(.phase != "Ready")'`,
		Args:        cobra.MaximumNArgs(1),
		Annotations: argsNamed("at most one release name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if watch && format.Value != "table" {
				return usageError{fmt.Errorf("--watch prints tables only; -o %s is for one snapshot", format.Value)}
			}
			if interval <= 0 {
				return usageError{fmt.Errorf("--interval must be positive, got %s", interval)}
			}
			c, err := hf.client()
			if err != nil {
				return err
			}
			f := hubclient.StatusFilter{Cluster: cluster}
			if len(args) == 1 {
				f.Release = args[0]
			}
			matrix := f != (hubclient.StatusFilter{})
			// The counts table needs no assignments: at 1,000 clusters x 20 releases that
			// is 14 MB of JSON the hub need not send (-o json keeps the whole contract).
			f.SummaryOnly = !matrix && format.Value == "table"
			if watch {
				return watchStatus(cmd.Context(), s, c, f, interval)
			}
			v, err := c.FilteredStatus(cmd.Context(), f)
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, v, func(w io.Writer) { printStatus(w, v, f, false) })
		},
	}
	hf.bind(cmd)
	cmd.Flags().StringVar(&cluster, "cluster", "", "show only this cluster's assignments")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the table, print the lines that change, as they change, until Ctrl-C")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --watch asks the hub")
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

// printStatus prints the status table: the counts per release, or with a filter the matrix.
// For --watch, the LAST SEEN column is left out: it changes at every heartbeat.
func printStatus(w io.Writer, v hubclient.StatusView, f hubclient.StatusFilter, watch bool) {
	printStatusHeader(w, v)
	if f.Release == "" && f.Cluster == "" {
		printReleaseSummaries(w, v.Releases)
		return
	}
	printMatrix(w, v, f, !watch)
}

// printStatusHeader prints what is wrong above the table: a rejected fleet configuration
// (and, when its commit's manifests roll out anyway, a sentence saying so), failing sources,
// scheduling problems.
func printStatusHeader(w io.Writer, v hubclient.StatusView) {
	if v.Fleet.Error != "" {
		fmt.Fprintf(w, "Fleet configuration error (revision %s stays in force): %s\n", shortCommit(v.Fleet.Revision), v.Fleet.Error)
		if v.Fleet.RolloutNotice != "" {
			fmt.Fprintln(w, v.Fleet.RolloutNotice)
		}
		fmt.Fprintln(w)
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

func printReleaseSummaries(w io.Writer, rs []hubclient.ReleaseSummary) {
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
func printMatrix(w io.Writer, v hubclient.StatusView, f hubclient.StatusFilter, lastSeen bool) {
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
	head := "CLUSTER\tDESIRED\tAPPLIED\tPHASE\tHEALTH\tDRIFT\tCONFLICTS\t"
	if lastSeen {
		head += "LAST SEEN\t"
	}
	head += "ERROR"
	if f.Release == "" {
		head = "RELEASE\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, a := range v.Assignments {
		if f.Release == "" {
			fmt.Fprintf(tw, "%s\t", a.Release)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t", a.Cluster, short(a.DesiredRevision), orDash(short(a.AppliedRevision)),
			phaseText(a), orDash(a.Health), driftText(a.Drifted), a.Conflicts)
		if lastSeen {
			fmt.Fprintf(tw, "%s\t", ago(a.LastSeen))
		}
		fmt.Fprintf(tw, "%s\n", a.Error)
	}
	tw.Flush()
	printHeldBack(w, v.Assignments, f.Release == "")
}

// printHeldBack says, below the matrix, what holds each held-back assignment: the agent's
// reason for Waiting (a window, a freeze, a suspension, a release it depends on) and where
// the release's rollout holds the cluster. withRelease names the release too.
func printHeldBack(w io.Writer, as []hubclient.AssignmentView, withRelease bool) {
	first := true
	for _, a := range as {
		if a.Waiting == "" && a.Rollout == "" {
			continue
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		who := a.Cluster
		if withRelease {
			who = a.Release + " on " + a.Cluster
		}
		if a.Waiting != "" {
			fmt.Fprintf(w, "%s: Waiting: %s\n", who, a.Waiting)
		}
		if a.Rollout != "" {
			fmt.Fprintf(w, "%s: Rollout: %s\n", who, a.Rollout)
		}
	}
}

// orDash shows an empty value as "-", so that no column is blank.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// phaseText shows an unreachable cluster's last reported phase beside it.
func phaseText(a hubclient.AssignmentView) string {
	if a.Phase == hubclient.PhaseUnreachable && a.ReportedPhase != "" {
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

// shortCommit abbreviates a bare commit hash as git does (7 digits), as errors name commits;
// other revisions as short does.
func shortCommit(rev string) string {
	if len(rev) == 40 && strings.Trim(rev, "0123456789abcdef") == "" {
		return rev[:7]
	}
	return short(rev)
}
