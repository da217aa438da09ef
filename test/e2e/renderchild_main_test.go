package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
	"github.com/flotilla/flotilla/internal/render"
)

// pool holds the package's clusters: newFleet takes its clusters from it, and gives them back
// reset when its test ends. Tests that kill an API server start clusters of their own.
var pool = clustertest.NewPool("e2e")

// TestMain lets this test binary serve as the render child of the agent's or hub's
// render.Sandbox (see docs/rendering.md), and starts the cluster pool's first clusters in
// parallel before the tests, as many as run at once.
func TestMain(m *testing.M) {
	render.RunChildIfRequested()
	if err := pool.Warm(context.Background(), 3); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	summary, err := pool.Close()
	fmt.Fprintln(os.Stderr, summary)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}
