// Command flotilla-bench is the developers' benchmark binary: the fleet simulator (bench
// fleet, idle, cold, the push baseline) and the hub it measures. No image ships it; the
// simulator and its in-memory clusters stay out of flotilla and flotilla-agent.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/flotilla/flotilla/internal/cli/benchcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := benchcmd.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
