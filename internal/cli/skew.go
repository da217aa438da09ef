package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func newSkewCommand(s streams) *cobra.Command {
	var (
		hf       hubFlags
		maxNames int
	)
	format := newChoice("table", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "skew [RELEASE]",
		Short: "Show which clusters run another revision than the rest of their release",
		Long: `Show, per release, the revisions its clusters actually run. Clusters that should be
identical (same release, same desired revision and artifact) are grouped by the revision
they applied; every cluster outside the desired group is skewed: still on an old revision,
failed applying one ("failed on"), or not reported yet ("none").

-o json lists every group with all its clusters.`,
		Example: `  flotilla skew
  flotilla skew baseline
  flotilla skew -o json | jq '.releases[] | select(.skewed > 0)'`,
		Args:        cobra.MaximumNArgs(1),
		Annotations: argsNamed("at most one release name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			release := ""
			if len(args) == 1 {
				release = args[0]
			}
			v, err := c.Skew(cmd.Context(), release)
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, v, func(w io.Writer) {
				if len(v.Releases) == 0 {
					fmt.Fprintln(w, "No release is assigned to any cluster.")
				}
				for _, r := range v.Releases {
					fmt.Fprintln(w, skewLine(r, maxNames))
				}
			})
		},
	}
	hf.bind(cmd)
	cmd.Flags().IntVar(&maxNames, "max-names", 10, "name at most this many clusters per revision (0: all)")
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

// skewLine reads "baseline: 88 of 100 on main@sha1:abc (desired); 10 on main@sha1:9f8: c-3, c-7;
// 2 failed on main@sha1:abc: c-5, c-9".
func skewLine(r hubclient.ReleaseSkew, maxNames int) string {
	var parts []string
	if len(r.Groups) == 0 || !r.Groups[0].Desired {
		parts = append(parts, fmt.Sprintf("0 of %d on %s (desired)", r.Clusters, short(r.DesiredRevision)))
	}
	for _, g := range r.Groups {
		rev := short(g.Revision)
		if rev == "" {
			rev = "none"
		}
		if g.Desired {
			parts = append(parts, fmt.Sprintf("%d of %d on %s (desired)", g.Count, r.Clusters, rev))
			continue
		}
		names, more := g.Clusters, 0
		if maxNames > 0 && len(names) > maxNames {
			names, more = names[:maxNames], len(names)-maxNames
		}
		on := "on"
		if g.Failed {
			on = "failed on"
		}
		p := fmt.Sprintf("%d %s %s: %s", g.Count, on, rev, strings.Join(names, ", "))
		if more > 0 {
			p += fmt.Sprintf(" and %d more", more)
		}
		parts = append(parts, p)
	}
	return r.Release + ": " + strings.Join(parts, "; ")
}
