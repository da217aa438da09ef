// Command flotilla-bench is the developers' benchmark binary: the fleet simulator (bench
// fleet, idle, cold, the push baseline) and the hub it measures. No image ships it; the
// simulator and its in-memory clusters stay out of flotilla and flotilla-agent.
package main

import (
	"github.com/flotilla/flotilla/internal/cli/benchcmd"
	"github.com/flotilla/flotilla/internal/cli/clikit"
)

func main() { clikit.Main(benchcmd.Run) }
