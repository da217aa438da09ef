// Command flotilla-agent is Flotilla's agent alone: it joins the hub, watches its cluster's
// desired state, renders, reconciles and reports, and takes offline bundles. It links nothing
// of the hub, the CLI's hub verbs or the simulator (see deps_test.go), so that it stays small
// on the edge.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/flotilla/flotilla/internal/cli/agentcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := agentcmd.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
