package notify_test

import (
	"os"
	"testing"

	"github.com/flotilla/flotilla/internal/render"
)

// TestMain lets this test binary serve as the render child of the hub's render.Sandbox
// (see docs/rendering.md), should a hub these tests start need one.
func TestMain(m *testing.M) {
	render.RunChildIfRequested()
	os.Exit(m.Run())
}
