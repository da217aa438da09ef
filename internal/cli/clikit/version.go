package clikit

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flotilla/flotilla/internal/version"
)

// NewVersionCommand prints which build binary is.
func NewVersionCommand(s Streams, binary string) *cobra.Command {
	format := NewChoice("text", "json")
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version of this " + binary + " binary",
		Example: "  " + binary + " version\n  " + binary + " version -o json",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			info := version.Get()
			if format.Value == "json" {
				return WriteJSON(s.Out, info)
			}
			_, err := fmt.Fprintln(s.Out, info.String())
			return err
		},
	}
	cmd.Flags().VarP(format, "output", "o", "output format: text or json")
	return cmd
}
