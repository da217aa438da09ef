// Command flotilla is Flotilla's CLI and hub: the hub, the client verbs, the demo, and the
// agent as `flotilla agent` (flotilla-agent is the agent alone).
package main

import (
	"github.com/flotilla/flotilla/internal/cli"
	"github.com/flotilla/flotilla/internal/cli/clikit"
)

func main() { clikit.Main(cli.Run) }
