package agentcmd

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/render"
)

// NewRenderChildCommand is the hidden verb a render.Sandbox runs this binary with: one
// render, its request on stdin, its objects on stdout (see docs/rendering.md).
func NewRenderChildCommand() *cobra.Command {
	return &cobra.Command{
		Use:    render.ChildVerb,
		Short:  "Render one release for the agent or hub (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := render.RunChild(cmd.InOrStdin(), cmd.OutOrStdout()); code != 0 {
				os.Exit(code)
			}
			return nil
		},
	}
}
