package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func newAuditCommand(s streams) *cobra.Command {
	var hf hubFlags
	var since string
	var f hubclient.AuditFilter
	format := newChoice("table", "json", "jsonl")
	cmd := &cobra.Command{
		Use:   "audit [--since 1h|RFC3339] [--cluster C] [--release R] [--action A]",
		Short: "Show the hub's audit trail: who changed what, when and where",
		Long: `Show the hub's audit trail, oldest first: fleet configuration and source revisions,
clusters added, relabelled and removed, join tokens issued and used, every apply that changed
something or found something wrong (revision, digest, objects created, configured and pruned,
outcome), releases removed from clusters, drift healed, and every admin API call that changed
something.

Checks that change nothing are not a record each: every assignment has a checkpoint, and at
most once per hub --audit-checkpoint interval (default 1h) an apply.verified record says it
was verified unchanged at its revision, from when to when, how many times (count).

DETAIL shows each record's fields as key=value, a nested field under a dotted key
(verified.count=2), a list as JSON; nothing is cut. -o json and -o jsonl give each detail as
a JSON object.

The trail is append-only and hash-chained: each record carries the hash of the one before,
so an edited, inserted or deleted record is detected by 'flotilla audit verify'.

The table and -o json show the newest --limit records (default 1000); -o jsonl streams every
matching record as JSON Lines, for export (a --limit caps it too).`,
		Example: `  flotilla audit --since 1h
  flotilla audit --cluster eu-prod-1 --release baseline
  flotilla audit --action cluster.removed --since 2026-11-01T00:00:00Z -o json
  flotilla audit -o jsonl > audit-$(date +%F).jsonl
  flotilla audit verify`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return usageError{err}
				}
				f.Since = t
			}
			if f.Limit < 0 {
				return usageError{errors.New("--limit must be at least 0")}
			}
			c, err := hf.client()
			if err != nil {
				return err
			}
			if format.Value == "jsonl" {
				return c.ExportAudit(cmd.Context(), f, s.out)
			}
			recs, err := c.Audit(cmd.Context(), f)
			if err != nil {
				return err
			}
			return printOut(s.out, format.Value, recs, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tTIME\tACTOR\tACTION\tCLUSTER\tRELEASE\tDETAIL")
				for _, r := range recs {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Local().Format(time.RFC3339), r.Actor, r.Action, dash(r.Cluster), dash(r.Release), detailString(r.Detail))
				}
				tw.Flush()
			})
		},
	}
	hf.bind(cmd)
	fl := cmd.Flags()
	fl.StringVar(&since, "since", "", "only records at or after this time: a duration back from now (90s, 1h, 7d) or an RFC 3339 time")
	fl.StringVar(&f.Cluster, "cluster", "", "only records about this cluster")
	fl.StringVar(&f.Release, "release", "", "only records about this release")
	fl.StringVar(&f.Action, "action", "", "only records of this action (cluster.added, token.used, apply, apply.verified, release.removed, drift.healed, fleet.revision, api.call, ...)")
	fl.IntVar(&f.Limit, "limit", 0, "at most this many records, the newest (default: 1000 for table and json, all for jsonl)")
	fl.VarP(format, "output", "o", "output format")
	cmd.AddCommand(newAuditVerifyCommand(s, &hf))
	return cmd
}

func newAuditVerifyCommand(s streams, hf *hubFlags) *cobra.Command {
	format := newChoice("text", "json")
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the audit trail's hash chain: exit 1 naming the first edited or deleted record",
		Long: `Have the hub walk its whole audit trail and check every record's hash and its link to the
record before, and the last record against the head the hub keeps. A record edited, inserted
or deleted (the last one included) breaks the chain: the command fails naming the first
broken record.

On success it prints the head (last sequence number and hash). Keep a copy elsewhere: it
exposes a later rewrite of all the history before it, which the hub alone cannot.`,
		Example: `  flotilla audit verify
  flotilla audit verify -o json | jq -r .headHash >> audit-heads.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := hf.client()
			if err != nil {
				return err
			}
			v, err := c.VerifyAudit(cmd.Context())
			var se *hubclient.StatusError
			if errors.As(err, &se) && se.Code == http.StatusConflict {
				return fmt.Errorf("audit trail is broken: %w", err)
			}
			if err != nil {
				return err
			}
			if format.Value == "json" {
				return writeJSON(s.out, v)
			}
			fmt.Fprintf(s.out, "Audit trail intact: %d records checked.\nHead: record %d, hash %s\n", v.Checked, v.HeadSeq, v.HeadHash)
			return nil
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

// parseSince reads --since: an RFC 3339 time, or a duration back from now, where a "d"
// suffix counts days (7d).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("--since %q: want a duration back from now (90s, 1h, 7d) or an RFC 3339 time (2026-11-01T00:00:00Z)", s)
	}
	return now.Add(-d), nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// detailString shows a record's detail on one line as key=value fields, keys sorted: a
// nested object's fields under dotted keys (verified.count=6), a list as JSON, a string
// quoted when it holds a space, a quote, an equals sign or nothing. Nothing is cut.
func detailString(d map[string]any) string {
	var parts []string
	appendFields(&parts, "", d)
	return strings.Join(parts, " ")
}

func appendFields(parts *[]string, prefix string, d map[string]any) {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if m, ok := d[k].(map[string]any); ok && len(m) > 0 {
			appendFields(parts, prefix+k+".", m)
			continue
		}
		*parts = append(*parts, prefix+k+"="+fieldValue(d[k]))
	}
}

// fieldValue is one detail value as detailString shows it.
func fieldValue(v any) string {
	switch v := v.(type) {
	case string:
		if v == "" || strings.ContainsAny(v, " \t\n\"=") || !strconv.CanBackquote(v) {
			return strconv.Quote(v)
		}
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return strconv.Quote(fmt.Sprint(v))
	}
	return string(b)
}
