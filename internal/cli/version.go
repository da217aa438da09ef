package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/version"
)

func newVersionCommand(s streams) *cobra.Command {
	format := newChoice("text", "json")
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of this flotilla binary",
		Example: `  flotilla version
  flotilla version -o json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			info := version.Get()
			if format.value == "json" {
				return writeJSON(s.out, info)
			}
			_, err := fmt.Fprintln(s.out, info.String())
			return err
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format: text or json")
	return cmd
}
