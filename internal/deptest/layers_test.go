package deptest_test

import (
	"testing"

	"github.com/flotilla/flotilla/internal/deptest"
)

// TestLayers: the hub and the agent share the renderer (internal/render), the desired-state
// model (internal/desired) and the wire types, and neither reaches into the other.
func TestLayers(t *testing.T) {
	t.Parallel()
	const m = "github.com/flotilla/flotilla/internal/"
	t.Run("the hub imports nothing of the agent", func(t *testing.T) {
		deptest.Check(t, m+"hub/...", []deptest.Rule{{Prefix: m + "agent", Why: "the agent's code (share through internal/render and the proto)"}})
	})
	t.Run("the agent imports nothing of the hub", func(t *testing.T) {
		deptest.Check(t, m+"agent/...", []deptest.Rule{{Prefix: m + "hub/", Why: "the hub's code (share through internal/render and the proto)"}})
	})
	t.Run("notifications and gates import nothing of the hub", func(t *testing.T) {
		for _, pkg := range []string{m + "notify", m + "window/..."} {
			deptest.Check(t, pkg, []deptest.Rule{{Prefix: m + "hub", Why: "the hub's code (the hub wires the notification runner through notify.Deps)"}})
		}
	})
	t.Run("the desired-state model imports neither", func(t *testing.T) {
		deptest.Check(t, m+"desired", []deptest.Rule{
			{Prefix: m + "hub/", Why: "the hub's code (the model is below both)"},
			{Prefix: m + "agent", Why: "the agent's code (the model is below both)"},
		})
	})
}
