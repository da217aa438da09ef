// Package agentcmd is the agent's command line: the flotilla-agent binary, and `flotilla
// agent` in the CLI binary. It links the agent and nothing of the hub's commands.
package agentcmd

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/cli/clikit"
)

// Name is the agent binary's name.
const Name = "flotilla-agent"

// NewRootCommand builds the flotilla-agent command: it runs the agent, and has the offline
// bundle verbs, version, and the hidden render child verb.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	s := clikit.Streams{Out: out, ErrOut: errOut}
	root := clikit.Root(NewRunCommand(s, Name), out, errOut)
	root.AddCommand(clikit.NewVersionCommand(s, Name), NewRenderChildCommand())
	clikit.WithUsageErrors(root)
	return root
}

// Run executes flotilla-agent with args (without the program name) and returns the exit code.
func Run(ctx context.Context, args []string, out, errOut io.Writer) int {
	root := NewRootCommand(out, errOut)
	root.SetArgs(args)
	return clikit.Exit(root.ExecuteContext(ctx), errOut, nil)
}
