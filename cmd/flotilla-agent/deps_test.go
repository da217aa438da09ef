package main

import (
	"testing"

	"github.com/flotilla/flotilla/internal/deptest"
)

// TestDependencies: the agent binary links nothing of the hub, the CLI's hub verbs, the
// simulator, the demo or the dashboard, no cloud SDK, grpc, sops's library, SQL driver or
// Helm's action package: each would grow every edge cluster's binary for code it never runs.
func TestDependencies(t *testing.T) {
	t.Parallel()
	const m = "github.com/flotilla/flotilla/internal/"
	deptest.Check(t, ".", []deptest.Rule{
		{Prefix: m + "hub/", Why: "the hub's code"},
		{Prefix: m + "hubclient", Why: "the user API's client (phases and rollout views are in internal/phase)"},
		{Prefix: m + "cli", Why: "the CLI's verbs", Except: []string{m + "cli/agentcmd", m + "cli/clikit"}},
		{Prefix: m + "fleetsim", Why: "the simulator"},
		{Prefix: m + "demo", Why: "the demo"},
		{Prefix: m + "importer", Why: "the importers"},
		{Prefix: "github.com/getsops/sops/v3", Why: "sops's library (internal/secrets/sopsfile reads the format)"},
		{Prefix: "github.com/aws/", Why: "a cloud SDK"},
		{Prefix: "github.com/Azure/", Why: "a cloud SDK"},
		{Prefix: "cloud.google.com/", Why: "a cloud SDK"},
		{Prefix: "github.com/hashicorp/vault", Why: "a cloud SDK"},
		{Prefix: "github.com/huaweicloud/", Why: "a cloud SDK"},
		{Prefix: "google.golang.org/grpc", Why: "grpc"},
		{Prefix: "database/sql", Why: "a SQL driver", Except: []string{"database/sql/driver"}},
		{Prefix: "modernc.org/sqlite", Why: "a SQL driver"},
		{Prefix: "github.com/jackc/pgx", Why: "a SQL driver"},
		{Prefix: "github.com/lib/pq", Why: "a SQL driver"},
		{Prefix: "helm.sh/helm/v3/pkg/action", Why: "Helm's action package (render uses the engine alone)"},
		{Prefix: "oras.land/", Why: "an OCI registry client (the hub fetches OCI sources)"},
		{Prefix: "github.com/chromedp/", Why: "the browser tests' driver"},
	})
}

// TestMakefileTags: built as the Makefile builds it, the agent links no Go plugin loader.
// With cgo on, Go's plugin package makes the linker export every symbol (kustomize imports
// it, unless told not to by the tag in GOTAGS), which cost 10 MB of symbol tables and about
// 20 MiB of resident memory at start; this fails if the tag is dropped or kustomize renames it.
func TestMakefileTags(t *testing.T) {
	t.Parallel()
	tags, err := deptest.MakefileTags("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	deptest.CheckTags(t, ".", tags, []deptest.Rule{
		{Prefix: "plugin", Why: "Go's plugin loader (the renderer allows kustomize's builtin plugins only)"},
	})
}
