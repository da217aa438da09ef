package cli

import (
	"github.com/flotilla/flotilla/internal/cli/clikit"
)

// choice is a flag value limited to a few words, such as -o text|json.
type choice = clikit.Choice

// newChoice returns a choice set to the first allowed word.
func newChoice(allowed ...string) *choice { return clikit.NewChoice(allowed...) }

// writeJSON writes v as indented JSON; printOut as a table (via table), JSON or YAML.
var (
	writeJSON = clikit.WriteJSON
	printOut  = clikit.PrintOut
)
