package agentcmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/cli/clikit"
)

// errRefused is a refused bundle: exit code 1 after the result is printed.
var errRefused = errors.New("bundle refused")

func newImportCommand(s clikit.Streams, name string) *cobra.Command {
	var (
		stateDir string
		wait     time.Duration
		format   = clikit.NewChoice("text", "json", "yaml")
	)
	cmd := &cobra.Command{
		Use:   "import FILE --state-dir S",
		Short: "Take on a bundle from \"flotilla bundle export\" at an air-gapped site",
		Long: `Verify a bundle written by "flotilla bundle export" and hand its desired state to the agent of
--state-dir, which reconciles it as if the hub had sent it (docs/airgap.md).

What is checked: the signature, against the hub CA the agent pinned when it joined; that the
bundle is for this agent's cluster; every artifact against its sha256 digest; that the
artifacts are exactly those the desired state needs; the bundle's bounds. A bundle older than the
desired state the agent has is refused (no rollback by replay); one of the same generation says
"already imported" and exits 0 (it still drops from the outbox the reports the hub has, see
"export-reports"). A refused bundle exits 1 with the reason.

Works with the agent running (it takes the bundle within seconds; this waits for its answer up
to --wait) or stopped (the import is done here and the agent reconciles it at its next start).`,
		Example: strings.ReplaceAll(`  NAME import /media/usb/edge-7-42.bundle --state-dir /var/lib/flotilla-agent

  # In a cluster: copy the bundle into the agent's pod and import it there
  kubectl -n flotilla-system cp edge-7-42.bundle flotilla-agent-0:/tmp/
  kubectl -n flotilla-system exec flotilla-agent-0 -- /flotilla-agent import /tmp/edge-7-42.bundle --state-dir /data`, "NAME", name),
		Args:        cobra.ExactArgs(1),
		Annotations: clikit.ArgsNamed("a bundle file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if stateDir == "" {
				return clikit.UsageError{Err: fmt.Errorf("--state-dir is required")}
			}
			if _, err := os.Stat(args[0]); err != nil {
				return clikit.UsageError{Err: fmt.Errorf("bundle: %w", err)}
			}
			res, err := agent.ImportBundle(cmd.Context(), stateDir, args[0], wait)
			if err != nil {
				return err
			}
			if err := clikit.PrintOut(s.Out, format.Value, res, func(w io.Writer) {
				switch res.Status {
				case agent.ImportRefused:
					fmt.Fprintf(w, "Refused %s: %s\n", filepath.Base(args[0]), res.Message)
				default:
					fmt.Fprintf(w, "%s.\n", capitalize(res.Message))
				}
				if res.OutboxDropped > 0 {
					fmt.Fprintf(w, "Dropped %d report(s) the hub has already ingested from the outbox.\n", res.OutboxDropped)
				}
			}); err != nil {
				return err
			}
			if res.Status == agent.ImportRefused {
				return fmt.Errorf("%w: %s", errRefused, res.Message)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "the agent's state dir (required)")
	cmd.Flags().DurationVar(&wait, "wait", 2*time.Minute, "with the agent running: how long to wait for it to take the bundle")
	cmd.Flags().VarP(format, "output", "o", "output format")
	return cmd
}

func newExportReportsCommand(s clikit.Streams, name string) *cobra.Command {
	var (
		stateDir string
		output   string
		wait     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "export-reports --state-dir S [-o FILE]",
		Short: "Write the agent's unsent reports to a file for \"flotilla hub import-reports\"",
		Long: `Write the reports in the agent's outbox (those the hub has not acknowledged), with their
sequence numbers, signed with the agent's own key and with its certificate, so that the hub can
tell which cluster wrote them (docs/airgap.md). Carry the file to the hub and run
"flotilla hub import-reports FILE": each report is ingested once, however often it is imported.

The reports stay in the outbox until a bundle exported after the import says the hub has them:
then "import" drops them. Nothing is lost if a file is lost; export again.

Works with the agent running or stopped. The default file is CLUSTER-reports-TIME.tar;
"-o -" writes to standard output.`,
		Example: "  " + name + " export-reports --state-dir /var/lib/flotilla-agent -o /media/usb/edge-7-reports.tar",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if stateDir == "" {
				return clikit.UsageError{Err: fmt.Errorf("--state-dir is required")}
			}
			var (
				w    = s.Out
				file *os.File
				err  error
			)
			if output != "-" {
				dir := "."
				if output != "" {
					dir = filepath.Dir(output)
				}
				if file, err = os.CreateTemp(dir, ".reports-*.part"); err != nil {
					return err
				}
				defer func() {
					_ = file.Close() // closed and checked on success; this covers the early returns
					os.Remove(file.Name())
				}()
				w = file
			}
			now := time.Now()
			res, err := agent.ExportReports(cmd.Context(), stateDir, w, wait, now)
			if err != nil {
				return err
			}
			path := output
			if file != nil {
				if err := file.Close(); err != nil {
					return err
				}
				if path == "" {
					path = fmt.Sprintf("%s-reports-%s.tar", res.Cluster, now.UTC().Format("20060102T150405Z"))
				}
				if err := os.Rename(file.Name(), path); err != nil {
					return err
				}
			}
			what := "no reports: the outbox is empty"
			if res.Reports > 0 {
				what = fmt.Sprintf("%d report(s), seq %d to %d", res.Reports, res.FirstSeq, res.LastSeq)
			}
			dest := path
			if output == "-" {
				dest = "standard output"
			}
			fmt.Fprintf(s.ErrOut, "Wrote %s to %s (cluster %s).\n", what, dest, res.Cluster)
			if res.Left > 0 {
				fmt.Fprintf(s.ErrOut, "%d more report(s) did not fit in one file: export again once the hub has these.\n", res.Left)
			}
			if output != "-" {
				fmt.Fprintf(s.ErrOut, "At the hub: flotilla hub import-reports %s\n", filepath.Base(path))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "the agent's state dir (required)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write (default CLUSTER-reports-TIME.tar; - for standard output)")
	cmd.Flags().DurationVar(&wait, "wait", 2*time.Minute, "with the agent running: how long to wait for it to write the reports")
	return cmd
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	if c := s[0]; 'a' <= c && c <= 'z' {
		return string(c-'a'+'A') + s[1:]
	}
	return s
}
