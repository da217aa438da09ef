// Command flotilla is the single binary of Flotilla: hub, agent, demo and the client verbs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/flotilla/flotilla/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
