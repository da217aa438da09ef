// Package cli wires flotilla's command line: one cobra command per verb, each a thin layer that
// parses flags and calls the package that does the work.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// streams are where a command writes: results to out, progress, logs and errors to errOut, so
// that `flotilla ... -o json | jq` sees only results.
type streams struct {
	out, errOut io.Writer
}

// Run executes flotilla with args (without the program name) and returns the process exit code.
func Run(ctx context.Context, args []string, out, errOut io.Writer) int {
	root := NewRootCommand(out, errOut)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			return int(code) // the command said what it had to (plan.go)
		}
		fmt.Fprintln(errOut, "Error:", err)
		if h := hint(err); h != "" {
			fmt.Fprintln(errOut, "Hint:", h)
		}
		var ue usageError
		if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ") {
			return 2
		}
		return 1
	}
	return 0
}

// usageError marks errors in how a command was called (exit code 2, like flag parsing errors).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// NewRootCommand builds the `flotilla` command tree.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	s := streams{out: out, errOut: errOut}
	var logLevel, logFormat string
	root := &cobra.Command{
		Use:   "flotilla",
		Short: "Pull-based GitOps for fleets of Kubernetes clusters",
		Long: `Flotilla delivers configuration from Git to fleets of Kubernetes clusters.

A central hub decides what every cluster should run; an agent in each cluster connects out
to the hub, pulls its desired state, applies it with server-side apply, keeps doing so when
the hub or the network is gone, and reports back.`,
		Example: `  # Run a local fleet on this machine
  flotilla demo

  # Show which build this is
  flotilla version -o json`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(errOut, logLevel, logFormat)
			if err != nil {
				return usageError{err}
			}
			cmd.SetContext(withLogger(cmd.Context(), logger))
			return nil
		},
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%s: %w (see %s --help)", cmd.CommandPath(), err, cmd.CommandPath())}
	})
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().StringVar(&logFormat, "log-format", "text", "log format: text or json")

	root.AddCommand(
		newVersionCommand(s),
		newDemoCommand(s),
		newRenderCommand(s),
		newReconcileCommand(s),
		newHubCommand(s),
		newAgentCommand(s),
		newClusterCommand(s),
		newGetCommand(s),
		newStatusCommand(s),
		newSkewCommand(s),
		newDriftCommand(s),
		newAuditCommand(s),
		newSyncCommand(s),
		newTokenCommand(s),
		newFreezeCommand(s),
		newUnfreezeCommand(s),
		newRolloutCommand(s),
		newLoginCommand(s),
		newBenchCommand(s),
		newPlanCommand(s),
		newImageCommand(s),
		newImportCommand(s),
		newBundleCommand(s),
		newSecretCommand(s),
		newRenderChildCommand(),
	)
	withUsageErrors(root)
	return root
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

type loggerKey struct{}

func withLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// loggerFrom returns the logger set up by the root command's flags.
func loggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
