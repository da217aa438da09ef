package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/window"
)

// Usage errors exit 2 before any connection; --help has examples.
func TestFreezeUsage(t *testing.T) {
	t.Parallel()
	hub := []string{"--hub", "https://127.0.0.1:1", "--token", "t"}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string // in standard output or error
	}{
		{"freeze help", []string{"freeze", "--help"}, 0, `flotilla freeze --release web --selector env=prod,region=eu --reason "bad config in 1.4.2"`},
		{"freeze list help", []string{"freeze", "list", "--help"}, 0, "flotilla freeze list -o json"},
		{"unfreeze help", []string{"unfreeze", "--help"}, 0, "flotilla unfreeze --all --release web"},
		{"suspend help", []string{"cluster", "suspend", "--help"}, 0, `flotilla cluster suspend eu-prod-1 --reason "node pool upgrade"`},
		{"resume help", []string{"cluster", "resume", "--help"}, 0, "flotilla cluster resume eu-prod-1"},
		{"freeze without a reason", append([]string{"freeze", "--release", "web"}, hub...), 2,
			"--reason is required: agents show it in the status of every release the freeze holds back"},
		{"freeze with a blank reason", append([]string{"freeze", "--reason", " "}, hub...), 2, "--reason is required"},
		{"freeze with a bad selector", append([]string{"freeze", "--selector", "env", "--reason", "x"}, hub...), 2, `--selector: label "env": want key=value`},
		{"freeze with an argument", append([]string{"freeze", "web", "--reason", "x"}, hub...), 2, `flotilla freeze`},
		{"unfreeze with nothing", append([]string{"unfreeze"}, hub...), 2, "flotilla unfreeze: needs freeze IDs (see flotilla freeze list) or --all"},
		{"unfreeze with IDs and --all", append([]string{"unfreeze", "frz-1", "--all"}, hub...), 2, "flotilla unfreeze: give freeze IDs or --all, not both"},
		{"unfreeze --release without --all", append([]string{"unfreeze", "frz-1", "--release", "web"}, hub...), 2, "--release selects freezes for --all"},
		{"suspend without a cluster", append([]string{"cluster", "suspend"}, hub...), 2, "flotilla cluster suspend: needs a cluster name (usage: flotilla cluster suspend NAME"},
		{"resume of two clusters", append([]string{"cluster", "resume", "a", "b"}, hub...), 2, "flotilla cluster resume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := Run(t.Context(), tt.args, &out, &errOut)
			if code != tt.wantCode || !strings.Contains(out.String()+errOut.String(), tt.want) {
				t.Errorf("flotilla %s: exit %d, want %d with %q:\n%s%s", strings.Join(tt.args, " "), code, tt.wantCode, tt.want, out.String(), errOut.String())
			}
		})
	}
}

// freeze, freeze list, unfreeze, cluster suspend and resume against a real hub: what the
// CLI prints, and what reaches the clusters' desired states.
func TestFreezeCommands(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 2, Releases: 2})
	run := func(t *testing.T, wantCode int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--hub", f.APIURL, "--token", f.AdminToken, "--ca", f.CAPath)
		if code := Run(t.Context(), args, &out, &errOut); code != wantCode {
			t.Fatalf("flotilla %s: exit %d, want %d: %s%s", strings.Join(args[:len(args)-6], " "), code, wantCode, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	gates := func(cluster string, ok func([]window.Gate) bool) []window.Gate {
		t.Helper()
		var gates []window.Gate
		eventually.Within(t, 30*time.Second, func() error {
			ds, err := f.Store.GetDesiredState(t.Context(), cluster)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := desired.DecodeDocument(ds.Document)
			if err != nil {
				t.Fatal(err)
			}
			if gates = doc.Gates; !ok(gates) {
				return fmt.Errorf("%s's gates are still %+v", cluster, gates)
			}
			return nil
		})
		return gates
	}
	prod := f.Clusters[0] // env=prod

	var web hubclient.FreezeView
	out := run(t, 0, "freeze", "--release", f.Releases[0], "--selector", "env=prod", "--reason", "bad config", "-o", "json")
	if err := json.Unmarshal([]byte(out), &web); err != nil || web.Release != f.Releases[0] || web.Clusters != 1 || web.Actor != "token:admin" {
		t.Fatalf("freeze -o json: %s (%v)", out, err)
	}
	out = run(t, 0, "freeze", "--reason", "incident 4711")
	if !strings.HasPrefix(out, "Frozen: every release on every cluster (2 clusters now) (frz-") || !strings.Contains(out, "Lift it with: flotilla unfreeze frz-") {
		t.Errorf("freeze:\n%s", out)
	}
	got := gates(prod, func(gs []window.Gate) bool { return len(gs) == 2 })
	if !slices.ContainsFunc(got, func(g window.Gate) bool {
		return g.Name == web.ID && g.Kind == "freeze" && slices.Equal(g.Releases, []string{f.Releases[0]}) && g.Reason == "bad config" && g.Actor == "token:admin"
	}) {
		t.Errorf("%s's gates: %+v", prod, got)
	}
	list := run(t, 0, "freeze", "list")
	for _, want := range []string{"ID  ", "RELEASE", web.ID, f.Releases[0], "env=prod (1 cluster now)", "token:admin", "bad config", "*", "every cluster (2 clusters now)", "incident 4711"} {
		if !strings.Contains(list, want) {
			t.Errorf("freeze list does not show %q:\n%s", want, list)
		}
	}

	if out := run(t, 1, "unfreeze", "frz-nope"); !strings.Contains(out, `freeze "frz-nope" not found: see flotilla freeze list`) {
		t.Errorf("unfreeze of an unknown ID:\n%s", out)
	}
	if out := run(t, 1, "freeze", "--release", "nope", "--reason", "x"); !strings.Contains(out, `freeze: release "nope" is not in the fleet configuration`) {
		t.Errorf("freeze of an unknown release:\n%s", out)
	}
	if out := run(t, 0, "unfreeze", web.ID); out != "Unfrozen: release "+f.Releases[0]+" on env=prod (1 cluster now) ("+web.ID+").\n" {
		t.Errorf("unfreeze ID:\n%s", out)
	}
	if out := run(t, 0, "unfreeze", "--all"); !strings.HasPrefix(out, "Unfrozen: every release on every cluster (2 clusters now) (frz-") {
		t.Errorf("unfreeze --all:\n%s", out)
	}
	if out := run(t, 0, "freeze", "list"); out != "Nothing is frozen.\n" {
		t.Errorf("freeze list after unfreeze --all:\n%s", out)
	}
	if out := run(t, 0, "unfreeze", "--all"); out != "Nothing to unfreeze.\n" {
		t.Errorf("unfreeze --all with nothing frozen:\n%s", out)
	}
	gates(prod, func(gs []window.Gate) bool { return len(gs) == 0 })

	if out := run(t, 0, "cluster", "suspend", prod, "--reason", "node pool upgrade"); !strings.HasPrefix(out, "Cluster "+prod+" suspended by token:admin since ") ||
		!strings.Contains(out, ": node pool upgrade.\nResume it with: flotilla cluster resume "+prod) {
		t.Errorf("cluster suspend:\n%s", out)
	}
	if out := run(t, 0, "cluster", "suspend", prod); !strings.HasPrefix(out, "Cluster "+prod+" already suspended by token:admin since ") {
		t.Errorf("cluster suspend again:\n%s", out)
	}
	got = gates(prod, func(gs []window.Gate) bool { return len(gs) == 1 })
	if want := (window.Gate{Name: prod, Kind: "suspend", Type: "deny", Reason: "node pool upgrade", Actor: "token:admin"}); got[0].Name != want.Name || got[0].Kind != want.Kind || got[0].Reason != want.Reason || got[0].Actor != want.Actor || len(got[0].Releases) != 0 {
		t.Errorf("%s's gates after suspend: %+v, want %+v", prod, got, want)
	}
	if out := run(t, 1, "cluster", "suspend", "nope"); !strings.Contains(out, `cluster "nope" not found`) {
		t.Errorf("suspend of an unknown cluster:\n%s", out)
	}
	if out := run(t, 0, "cluster", "resume", prod); out != "Cluster "+prod+" resumed.\n" {
		t.Errorf("cluster resume:\n%s", out)
	}
	if out := run(t, 0, "cluster", "resume", prod); out != "Cluster "+prod+" was not suspended.\n" {
		t.Errorf("cluster resume again:\n%s", out)
	}
	gates(prod, func(gs []window.Gate) bool { return len(gs) == 0 })
}
