package opsapi

import (
	"os"
	"testing"

	"github.com/flotilla/flotilla/internal/render"
)

// TestMain lets this test binary serve as the render child of the agent's or hub's
// render.Sandbox (see docs/rendering.md).
func TestMain(m *testing.M) {
	render.RunChildIfRequested()
	os.Exit(m.Run())
}
