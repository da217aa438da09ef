package main

import (
	"testing"

	"github.com/flotilla/flotilla/internal/deptest"
)

// TestDependencies: the CLI and hub binary does not link the simulator, its in-memory
// clusters or the benchmark verbs (flotilla-bench has them), nor sops's library, Helm's
// action package or the browser tests' driver.
func TestDependencies(t *testing.T) {
	t.Parallel()
	const m = "github.com/flotilla/flotilla/internal/"
	deptest.Check(t, ".", []deptest.Rule{
		{Prefix: m + "fleetsim", Why: "the simulator (flotilla-bench)"},
		{Prefix: m + "cli/benchcmd", Why: "the benchmark verbs (flotilla-bench)"},
		{Prefix: "github.com/getsops/sops/v3", Why: "sops's library (internal/secrets/sopsfile reads the format)"},
		{Prefix: "helm.sh/helm/v3/pkg/action", Why: "Helm's action package (render uses the engine alone)"},
		{Prefix: "github.com/chromedp/", Why: "the browser tests' driver"},
	})
}
