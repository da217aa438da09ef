package cli

import (
	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/cli/agentcmd"
	"github.com/flotilla/flotilla/internal/cli/clikit"
)

// newAgentCommand is `flotilla agent`: the agent of the flotilla-agent binary (agentcmd),
// kept in the CLI binary for existing installs and local fleets, with `agent install`, which
// talks to the hub's user API and so lives here.
func newAgentCommand(s streams) *cobra.Command {
	cmd := agentcmd.NewRunCommand(clikit.Streams{Out: s.out, ErrOut: s.errOut}, "flotilla agent")
	cmd.AddCommand(newAgentInstallCommand(s))
	return cmd
}
