package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

const freezeLong = `Freeze stops new revisions from landing, at once, for the whole fleet or part of it: every
release or one (--release), on every cluster or those a label selector matches (--selector).
What runs stays running, and drift is still corrected. Agents get the freeze through the watch
they hold and show it in status: "Waiting: frozen by token:alice: incident 4711".

A freeze lasts until it is lifted with flotilla unfreeze. To land one change through it, sync
with an override: flotilla sync RELEASE --override --reason TEXT (audited as sync.override).

Freezing every release needs a deployer of every project; freezing one release, a deployer of
its project. Every freeze and unfreeze is recorded in the audit trail with its reason.`

func newFreezeCommand(s streams) *cobra.Command {
	var (
		hf        hubFlags
		release   string
		selectors []string
		reason    string
	)
	format := newChoice("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "freeze [--release R] [--selector key=value,...] --reason TEXT",
		Short: "Stop new revisions for the fleet or part of it until unfreeze (an emergency stop)",
		Long:  freezeLong,
		Example: `  # Stop every release everywhere
  flotilla freeze --reason "incident 4711: database failover"

  # Stop one release on the EU production clusters
  flotilla freeze --release web --selector env=prod,region=eu --reason "bad config in 1.4.2"

  # See what is frozen, then lift it
  flotilla freeze list
  flotilla unfreeze frz-3f9c0a1b2c3d4e5f`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageError{errors.New("--reason is required: agents show it in the status of every release the freeze holds back")}
			}
			sel, err := parseSelector(selectors)
			if err != nil {
				return usageError{err}
			}
			c, err := hf.client()
			if err != nil {
				return err
			}
			f, err := c.Freeze(cmd.Context(), release, hubclient.FreezeRequest{Selector: sel, Reason: reason})
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, f, func(w io.Writer) {
				fmt.Fprintf(w, "Frozen: %s on %s (%s).\nLift it with: flotilla unfreeze %s\n", freezeReleases(f), freezeClusters(f), f.ID, f.ID)
			})
		},
	}
	hf.bind(cmd)
	cmd.Flags().StringVar(&release, "release", "", "freeze only this release (default: every release)")
	cmd.Flags().StringArrayVar(&selectors, "selector", nil, "freeze only the clusters with these labels: key=value[,key=value...] (repeatable; default: every cluster)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, shown in status and recorded in the audit trail (required)")
	cmd.Flags().VarP(format, "output", "o", "output format")
	cmd.AddCommand(newFreezeListCommand(s, &hf))
	return cmd
}

func newFreezeListCommand(s streams, hf *hubFlags) *cobra.Command {
	format := newChoice("table", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the freezes in force, oldest first",
		Example: `  flotilla freeze list
  flotilla freeze list -o json | jq -r '.[] | select(.release == "web") | .id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			fs, err := c.Freezes(cmd.Context())
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, fs, func(w io.Writer) {
				if len(fs) == 0 {
					fmt.Fprintln(w, "Nothing is frozen.")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tRELEASE\tCLUSTERS\tBY\tSINCE\tREASON")
				for _, f := range fs {
					rel := f.Release
					if rel == "" {
						rel = "*"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.ID, rel, freezeClusters(f), f.Actor, f.Created.Local().Format(time.RFC3339), f.Reason)
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

func newUnfreezeCommand(s streams) *cobra.Command {
	var (
		hf      hubFlags
		all     bool
		release string
	)
	cmd := &cobra.Command{
		Use:   "unfreeze ID... | --all [--release R]",
		Short: "Lift freezes: pending revisions land at once where nothing else holds them",
		Long: `Lift freezes by ID (see flotilla freeze list), or every freeze with --all (with --release,
every freeze of that release). Agents apply what the freeze held back as soon as they get the
change, without waiting for their next interval.`,
		Example: `  flotilla unfreeze frz-3f9c0a1b2c3d4e5f
  flotilla unfreeze --all
  flotilla unfreeze --all --release web`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case all && len(args) > 0:
				return usageError{fmt.Errorf("flotilla unfreeze: give freeze IDs or --all, not both (usage: %s)", cmd.UseLine())}
			case !all && len(args) == 0:
				return usageError{fmt.Errorf("flotilla unfreeze: needs freeze IDs (see flotilla freeze list) or --all (usage: %s)", cmd.UseLine())}
			case !all && release != "":
				return usageError{errors.New("flotilla unfreeze: --release selects freezes for --all; with IDs, leave it out")}
			}
			c, err := hf.client()
			if err != nil {
				return err
			}
			fs, err := c.Freezes(cmd.Context())
			if err != nil {
				return err
			}
			var lift []hubclient.FreezeView
			if all {
				for _, f := range fs {
					if release == "" || f.Release == release {
						lift = append(lift, f)
					}
				}
				if len(lift) == 0 {
					fmt.Fprintln(s.out, "Nothing to unfreeze.")
					return nil
				}
			}
			for _, id := range args {
				i := indexFreeze(fs, id)
				if i < 0 {
					return fmt.Errorf("freeze %q not found: see flotilla freeze list", id)
				}
				lift = append(lift, fs[i])
			}
			var errs []error
			for _, f := range lift {
				// A freeze of one release is lifted through its release, which a deployer of
				// its project may use.
				if _, err := c.Unfreeze(cmd.Context(), f.Release, f.ID); err != nil {
					errs = append(errs, fmt.Errorf("unfreeze %s: %w", f.ID, err))
					continue
				}
				fmt.Fprintf(s.out, "Unfrozen: %s on %s (%s).\n", freezeReleases(f), freezeClusters(f), f.ID)
			}
			return errors.Join(errs...)
		},
	}
	hf.bind(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "lift every freeze (with --release: every freeze of that release)")
	cmd.Flags().StringVar(&release, "release", "", "with --all: lift only the freezes of this release")
	return cmd
}

func indexFreeze(fs []hubclient.FreezeView, id string) int {
	for i, f := range fs {
		if f.ID == id {
			return i
		}
	}
	return -1
}

// parseSelector reads --selector values: key=value pairs, comma-separated or repeated.
func parseSelector(values []string) (map[string]string, error) {
	var pairs []string
	for _, v := range values {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				pairs = append(pairs, p)
			}
		}
	}
	sel, err := parseLabels(pairs)
	if err != nil {
		return nil, fmt.Errorf("--selector: %w", err)
	}
	if len(sel) == 0 {
		return nil, nil
	}
	return sel, nil
}

func freezeReleases(f hubclient.FreezeView) string {
	if f.Release == "" {
		return "every release"
	}
	return "release " + f.Release
}

func freezeClusters(f hubclient.FreezeView) string {
	n := fmt.Sprintf("%d clusters", f.Clusters)
	if f.Clusters == 1 {
		n = "1 cluster"
	}
	if len(f.Selector) == 0 {
		return "every cluster (" + n + " now)"
	}
	return labelString(f.Selector) + " (" + n + " now)"
}
