package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func newRolloutCommand(s streams) *cobra.Command {
	var hf hubFlags
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show and steer releases' rollouts: status, pause, resume, approve, abort, rollback",
		Long: `A release with spec.rollout moves each new revision through its waves (docs/rollouts.md):
one artifact digest per rollout, a wave at a time, each cluster counted done once its agent
reports the revision Ready and healthy for the wave's bake time. These commands show where a
rollout stands and act on it through the hub's user API; every action is audited with the
actor and notified.

  status [RELEASE]   where the rollout stands, wave by wave (without RELEASE: every rollout)
  pause RELEASE      no further cluster gets the revision; clusters already on it keep it
  resume RELEASE     carry on from where it was paused
  approve RELEASE    let the wave that waits for approval start (--wave names it)
  abort RELEASE      stop the rollout for good: clusters keep what they run now
  rollback RELEASE   the clusters that got the revision go back to the stable one

Acting needs a deployer token of the release's project (or admin); status needs a viewer.`,
		Example: `  flotilla rollout status
  flotilla rollout status web
  flotilla rollout approve web --wave rest
  flotilla rollout pause web
  flotilla rollout rollback web
  flotilla rollout status web -o json | jq '.waves[] | {name, phase, failures}'`,
	}
	hf.bind(cmd)
	cmd.AddCommand(newRolloutStatusCommand(s, &hf))
	for _, a := range rolloutActions {
		cmd.AddCommand(newRolloutActionCommand(s, &hf, a))
	}
	return cmd
}

// rolloutAction is one of the verbs that act on a rollout.
type rolloutAction struct {
	name, done, short, long, example string
}

var rolloutActions = []rolloutAction{
	{
		name: "pause", done: "paused",
		short: "Pause a release's rollout: no further cluster gets its revision until resume",
		long: `Pause a release's rollout. No further cluster gets the rollout's revision; clusters that have
it keep it, and their health still counts. A paused rollout keeps its place: resume carries on
from the same wave.`,
		example: `  flotilla rollout pause web`,
	},
	{
		name: "resume", done: "resumed",
		short:   "Resume a paused rollout from where it stopped",
		long:    `Resume a paused rollout: the wave in progress carries on, with the same pinned revision.`,
		example: `  flotilla rollout resume web`,
	},
	{
		name: "approve", done: "approved",
		short: "Approve the wave that waits for approval (approval: required)",
		long: `Approve a wave whose spec says approval: required, so that it starts once the waves before it
are done. Without --wave, the wave that waits for approval now; with --wave, that wave, which
may be approved ahead of its turn.`,
		example: `  flotilla rollout approve web
  flotilla rollout approve web --wave rest`,
	},
	{
		name: "abort", done: "aborted",
		short: "Abort a release's rollout: it stops for good and clusters keep what they run",
		long: `Abort a release's rollout. No further cluster gets its revision, and clusters keep what they
run now (to take back the revision from those that got it, use rollback). The next revision
of the release starts a new rollout.`,
		example: `  flotilla rollout abort web`,
	},
	{
		name: "rollback", done: "rolled back",
		short: "Roll a release's rollout back: clusters that got its revision return to the stable one",
		long: `Roll back a release's rollout: every cluster that got the rollout's revision goes back to the
stable revision, the last one whose rollout completed. The agents already hold its artifact,
so a rollback works while the source is down.`,
		example: `  flotilla rollout rollback web`,
	},
}

func newRolloutActionCommand(s streams, hf *hubFlags, a rolloutAction) *cobra.Command {
	var wave string
	format := newChoice("text", "json", "yaml")
	use := a.name + " RELEASE"
	if a.name == "approve" {
		use += " [--wave NAME]"
	}
	cmd := &cobra.Command{
		Use:         use,
		Short:       a.short,
		Long:        a.long,
		Example:     a.example,
		Args:        cobra.ExactArgs(1),
		Annotations: argsNamed("a release name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			// The hub's refusal names the release and the action already.
			v, err := c.ActOnRollout(cmd.Context(), args[0], a.name, hubclient.RolloutAction{Wave: wave})
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, v, func(w io.Writer) {
				what := "rollout/" + args[0] + " " + a.done
				if wave != "" {
					what += " (wave " + wave + ")"
				}
				fmt.Fprintln(w, what)
				fmt.Fprintf(w, "Phase: %s\n", rolloutPhaseText(v))
				if a.name == "approve" && v.Phase == "WaitingApproval" {
					// The answer is the rollout as the action left it.
					fmt.Fprintln(w, "The hub starts the wave at its next step: see flotilla rollout status "+args[0])
				}
			})
		},
	}
	if a.name == "approve" {
		cmd.Flags().StringVar(&wave, "wave", "", "the wave to approve (default: the one waiting for approval)")
	}
	cmd.Flags().VarP(format, "output", "o", "output format: text, or the rollout after the action as json or yaml")
	return cmd
}

func newRolloutStatusCommand(s streams, hf *hubFlags) *cobra.Command {
	format := newChoice("table", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "status [RELEASE]",
		Short: "Show where a release's rollout stands, wave by wave, or list every rollout",
		Long: `Show a release's rollout: its phase (Idle, Progressing, Paused, WaitingApproval, Halted,
Completed, Aborted, RolledBack) and what it waits for; the revision it is pinned to, the
stable one (what rollback restores) and a newer one queued behind it; then each wave with its
phase (Pending, WaitingApproval, WaitingWindow, Progressing, Done, Halted), its approval, its
failures against maxFailures, and each of its clusters with its phase (Pending, Progressing,
Baking, Done, Failed, Skipped, RolledBack) and message; and the recent events.

Without RELEASE: one line per release with a rollout.

-o json prints the hub's RolloutView (a list of them without RELEASE), a stable contract for
scripts.`,
		Example: `  flotilla rollout status
  flotilla rollout status web
  flotilla rollout status web -o json | jq -r '.waves[] | select(.phase == "Halted") | .name'`,
		Args:        cobra.MaximumNArgs(1),
		Annotations: argsNamed("at most one release name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			if len(args) == 0 {
				vs, err := c.Rollouts(cmd.Context())
				if err != nil {
					return err
				}
				if vs == nil {
					vs = []phase.RolloutView{}
				}
				return printOut(s.out, format.Value, vs, func(w io.Writer) { printRollouts(w, vs) })
			}
			v, err := c.Rollout(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, v, func(w io.Writer) { printRollout(w, v, time.Now()) })
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

// printRollouts prints one line per rollout: its phase, revisions, the wave it is at and how
// many of its clusters are done.
func printRollouts(w io.Writer, vs []phase.RolloutView) {
	if len(vs) == 0 {
		fmt.Fprintln(w, "No release has a rollout.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RELEASE\tPHASE\tREVISION\tSTABLE\tWAVE\tDONE\tMESSAGE")
	for _, v := range vs {
		done, total := 0, 0
		for _, wv := range v.Waves {
			for _, c := range wv.Clusters {
				total++
				if c.Phase == "Done" {
					done++
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", v.Release, rolloutPhaseText(v), orDash(short(v.Revision)), orDash(short(v.StableRevision)),
			orDash(currentWave(v)), done, total, v.Message)
	}
	tw.Flush()
}

// currentWave names the first wave that is not done, "" when every one is (or there is none).
func currentWave(v phase.RolloutView) string {
	for _, wv := range v.Waves {
		if wv.Phase != "Done" {
			return wv.Name
		}
	}
	return ""
}

// rolloutPhaseText is the rollout's phase, with "paused" beside a phase that does not say so.
func rolloutPhaseText(v phase.RolloutView) string {
	if v.Paused && v.Phase != "Paused" {
		return v.Phase + " (paused)"
	}
	return v.Phase
}

// printRollout prints one rollout: the header, then a block per wave with its clusters, then
// the events; now is when the times are counted from.
func printRollout(w io.Writer, v phase.RolloutView, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Release:\t%s\n", v.Release)
	fmt.Fprintf(tw, "Phase:\t%s\n", rolloutPhaseText(v))
	if v.Message != "" {
		fmt.Fprintf(tw, "Message:\t%s\n", v.Message)
	}
	fmt.Fprintf(tw, "Revision:\t%s\n", revisionText(v.Revision, v.Digest, "none: nothing is rolling out"))
	fmt.Fprintf(tw, "Stable:\t%s\n", revisionText(v.StableRevision, v.StableDigest, "none yet: no rollout of this release completed"))
	if v.QueuedRevision != "" {
		fmt.Fprintf(tw, "Queued:\t%s, starts when this rollout ends\n", revisionText(v.QueuedRevision, v.QueuedDigest, ""))
	}
	if v.StartedAt != nil {
		fmt.Fprintf(tw, "Started:\t%s\n", sinceText(*v.StartedAt, now))
	}
	if v.UpdatedAt != nil {
		fmt.Fprintf(tw, "Updated:\t%s\n", sinceText(*v.UpdatedAt, now))
	}
	tw.Flush()
	for _, wv := range v.Waves {
		fmt.Fprintf(w, "\nWave %s: %s\n", wv.Name, wv.Phase)
		fmt.Fprintf(w, "  %s\n", waveSettings(wv))
		if len(wv.Clusters) == 0 {
			fmt.Fprintln(w, "  no cluster")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  CLUSTER\tPHASE\tREVISION\tSINCE\tMESSAGE")
		for _, c := range wv.Clusters {
			since := "-"
			if c.Since != nil {
				since = sinceText(*c.Since, now)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Cluster, c.Phase, orDash(short(c.Revision)), since, c.Message)
		}
		tw.Flush()
	}
	if len(v.Events) > 0 {
		fmt.Fprintln(w, "\nEvents:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, e := range v.Events {
			// The message names the wave and cluster when there is one.
			var what []string
			if e.Message != "" {
				what = append(what, e.Message)
			} else {
				if e.Wave != "" {
					what = append(what, "wave "+e.Wave)
				}
				if e.Cluster != "" {
					what = append(what, "cluster "+e.Cluster)
				}
			}
			if e.Actor != "" && !strings.Contains(e.Message, e.Actor) {
				what = append(what, "by "+e.Actor)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.At.Local().Format(time.RFC3339), e.Type, strings.Join(what, ", "))
		}
		tw.Flush()
	}
}

// waveSettings says a wave's approval, failures against its budget, concurrency and bake.
func waveSettings(wv phase.WaveView) string {
	var parts []string
	switch {
	case wv.Approval && wv.ApprovedBy != "":
		parts = append(parts, "approved by "+wv.ApprovedBy)
	case wv.Approval:
		parts = append(parts, "approval required, not given yet")
	}
	parts = append(parts, fmt.Sprintf("failures %d of at most %d", wv.Failures, wv.MaxFailures))
	if wv.MaxConcurrent > 0 {
		parts = append(parts, fmt.Sprintf("%d cluster(s) at a time", wv.MaxConcurrent))
	}
	if wv.Bake != "" {
		parts = append(parts, "bake "+wv.Bake)
	}
	return strings.Join(parts, ", ")
}

// revisionText shows a revision with its digest, or none when there is no revision.
func revisionText(rev, digest, none string) string {
	if rev == "" {
		return none
	}
	if digest == "" {
		return rev
	}
	return rev + " (" + shortDigest(digest) + ")"
}

// shortDigest cuts "sha256:<64 hex>" to its first 12 hex digits, as docker does.
func shortDigest(d string) string {
	if algo, hex, ok := strings.Cut(d, ":"); ok && len(hex) > 12 {
		return algo + ":" + hex[:12]
	}
	return d
}

// sinceText is a time and how long before now it was.
func sinceText(t, now time.Time) string {
	return fmt.Sprintf("%s (%s ago)", t.Local().Format(time.RFC3339), now.Sub(t).Round(time.Second))
}
