package render_test

import (
	"os"
	"testing"

	"github.com/flotilla/flotilla/internal/render"
)

func TestMain(m *testing.M) {
	render.RunChildIfRequested() // the Sandbox's child is this test binary
	os.Exit(m.Run())
}
