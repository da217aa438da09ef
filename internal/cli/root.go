// Package cli wires flotilla's command line: one cobra command per verb, each a thin layer that
// parses flags and calls the package that does the work.
package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/cli/agentcmd"
	"github.com/flotilla/flotilla/internal/cli/clikit"
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
	err := root.ExecuteContext(ctx)
	var code exitCode
	if errors.As(err, &code) {
		return int(code) // the command said what it had to (plan.go)
	}
	return clikit.Exit(err, errOut, hint)
}

// usageError marks errors in how a command was called (exit code 2, like flag parsing errors).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// Usage marks it for clikit.IsUsage.
func (usageError) Usage() {}

// NewRootCommand builds the `flotilla` command tree.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	s := streams{out: out, errOut: errOut}
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
	}
	clikit.Root(root, out, errOut)

	root.AddCommand(
		clikit.NewVersionCommand(clikit.Streams{Out: out, ErrOut: errOut}, "flotilla"),
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
		newPlanCommand(s),
		newImageCommand(s),
		newImportCommand(s),
		newBundleCommand(s),
		newSecretCommand(s),
		agentcmd.NewRenderChildCommand(),
	)
	withUsageErrors(root)
	return root
}

// loggerFrom returns the logger set up by the root command's flags.
func loggerFrom(ctx context.Context) *slog.Logger { return clikit.LoggerFrom(ctx) }
