// Command flotilla-agent is Flotilla's agent alone: it joins the hub, watches its cluster's
// desired state, renders, reconciles and reports, and takes offline bundles. It links nothing
// of the hub, the CLI's hub verbs or the simulator (see deps_test.go), so that it stays small
// on the edge.
package main

import (
	"github.com/flotilla/flotilla/internal/cli/agentcmd"
	"github.com/flotilla/flotilla/internal/cli/clikit"
)

func main() { clikit.Main(agentcmd.Run) }
