package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestViews runs the fleet views against a real hub with a seeded fleet of 60 clusters x 3
// releases (see hubtest.Seed for the mix) and checks what a user reads.
func TestViews(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 60, Releases: 3})
	conn := []string{"--hub", f.APIURL, "--token", f.AdminToken, "--ca", f.CAPath}
	run := func(t *testing.T, wantCode int, args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Run(t.Context(), append(args, conn...), &out, &errOut); code != wantCode {
			t.Fatalf("flotilla %s: exit %d, want %d: %s", strings.Join(args, " "), code, wantCode, errOut.String())
		}
		return out.String(), errOut.String()
	}
	// Of 60 clusters: i%10==3 on the old revision (6), i%20==7 failed (3), i%10==5 drifted
	// (6; healed on release-00 and release-02, left in place on release-01), cluster-0011 and cluster-0036 conflicted on release-00 (i%25==11), cluster-0049
	// unreachable (i%10==9: otherwise Ready).
	t.Run("status counts per release", func(t *testing.T) {
		out, _ := run(t, 0, "status")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 4 {
			t.Fatalf("want a header and 3 releases:\n%s", out)
		}
		wantHead := []string{"RELEASE", "DESIRED", "CLUSTERS", "READY", "PROGRESSING", "PENDING", "FAILED", "UNREACHABLE", "DRIFTED", "CONFLICTED"}
		if got := strings.Fields(lines[0]); fmt.Sprint(got) != fmt.Sprint(wantHead) {
			t.Errorf("header = %v, want %v", got, wantHead)
		}
		// 60 - 6 old - 3 failed - 1 unreachable = 50 Ready; on release-00 the two conflicted
		// clusters failed too.
		// Drift is healed on even releases: only release-01 counts drifted clusters.
		for i, want := range []string{"release-00 %s 60 48 6 0 5 1 0 2", "release-01 %s 60 50 6 0 3 1 6 0", "release-02 %s 60 50 6 0 3 1 0 0"} {
			if got, want := strings.Join(strings.Fields(lines[i+1]), " "), fmt.Sprintf(want, short(f.Revision)); got != want {
				t.Errorf("line %d = %q, want %q", i+1, got, want)
			}
		}
	})
	t.Run("every view has help with examples and -o", func(t *testing.T) {
		for _, args := range [][]string{{"status"}, {"skew"}, {"drift"}, {"cluster", "show"}, {"get"}, {"audit"}} {
			var out bytes.Buffer
			if code := Run(t.Context(), append(args, "--help"), &out, &out); code != 0 || !strings.Contains(out.String(), "Examples:") || !strings.Contains(out.String(), "-o, --output") {
				t.Errorf("flotilla %s --help (exit %d):\n%s", strings.Join(args, " "), code, out.String())
			}
		}
		_, errOut := run(t, 2, "skew", "-o", "xml")
		if !strings.Contains(errOut, `want table or json or yaml, got "xml"`) {
			t.Errorf("skew -o xml: %s", errOut)
		}
	})
	t.Run("summary only leaves the assignments out", func(t *testing.T) {
		c, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.FilteredStatus(t.Context(), hubclient.StatusFilter{SummaryOnly: true})
		if err != nil || len(v.Assignments) != 0 || len(v.Releases) != 3 || v.Releases[1].Drifted != 6 {
			t.Errorf("summary: %v, %d assignments, releases %+v", err, len(v.Assignments), v.Releases)
		}
	})
	t.Run("status json keeps the assignments contract", func(t *testing.T) {
		out, _ := run(t, 0, "status", "-o", "json")
		var v hubclient.StatusView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Assignments) != 180 || len(v.Releases) != 3 || v.Releases[0].Ready != 48 {
			t.Errorf("status -o json: %d assignments, releases %+v", len(v.Assignments), v.Releases)
		}
		var raw struct {
			Assignments []map[string]any `json:"assignments"`
		}
		_ = json.Unmarshal([]byte(out), &raw)
		for _, k := range []string{"release", "cluster", "desiredRevision", "appliedRevision", "phase", "drifted", "lastSeen"} {
			if _, ok := raw.Assignments[0][k]; !ok {
				t.Errorf("assignments[0] has no %q: %v", k, raw.Assignments[0])
			}
		}
	})
	t.Run("status RELEASE shows its matrix", func(t *testing.T) {
		out, _ := run(t, 0, "status", "release-01")
		if !strings.Contains(out, "Release release-01: 50 of 60 clusters Ready on "+short(f.Revision)) {
			t.Errorf("no summary line:\n%s", out)
		}
		for _, want := range []string{
			"CLUSTER", "DESIRED", "APPLIED", "PHASE", "HEALTH", "DRIFT", "CONFLICTS", "LAST SEEN",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("matrix lacks column %s:\n%s", want, out)
			}
		}
		rows := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			if fs := strings.Fields(l); len(fs) > 0 && strings.HasPrefix(fs[0], "cluster-") {
				rows[fs[0]] = strings.Join(fs, " ")
			}
		}
		if len(rows) != 60 {
			t.Fatalf("%d cluster rows, want 60:\n%s", len(rows), out)
		}
		checks := map[string]string{
			"cluster-0000": short(f.Revision) + " " + short(f.Revision) + " Ready Current -",
			"cluster-0003": short(f.Revision) + " " + short(hubtest.OldRevision) + " Progressing",
			"cluster-0007": "Failed Failed - 0",
			"cluster-0005": "Ready Current drifted", // release-01: drift left in place
			"cluster-0049": "Unreachable (last Ready)",
		}
		for c, want := range checks {
			if !strings.Contains(rows[c], want) {
				t.Errorf("%s row = %q, want it to contain %q", c, rows[c], want)
			}
		}
		if strings.Contains(out, "release-00") {
			t.Errorf("status release-01 shows another release:\n%s", out)
		}
	})
	t.Run("status of an unknown release is a clear error", func(t *testing.T) {
		_, errOut := run(t, 1, "status", "nope")
		if !strings.Contains(errOut, `release "nope" is not in the fleet configuration in force (releases: release-00, release-01, release-02)`) {
			t.Errorf("stderr: %s", errOut)
		}
		_, errOut = run(t, 1, "status", "--cluster", "nope")
		if !strings.Contains(errOut, `cluster "nope" not found`) {
			t.Errorf("stderr: %s", errOut)
		}
		_, errOut = run(t, 1, "skew", "nope")
		if !strings.Contains(errOut, `release "nope" is not in the fleet configuration in force`) {
			t.Errorf("skew nope: %s", errOut)
		}
		c, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range []func() error{
			func() error {
				_, err := c.FilteredStatus(t.Context(), hubclient.StatusFilter{Release: "nope"})
				return err
			},
			func() error { _, err := c.Drift(t.Context(), hubclient.DriftFilter{Cluster: "nope"}); return err },
		} {
			var se *hubclient.StatusError
			if err := call(); !errors.As(err, &se) || se.Code != http.StatusNotFound {
				t.Errorf("unknown name: %v, want a 404", err)
			}
		}
	})
	t.Run("status --cluster json is filtered by the hub", func(t *testing.T) {
		out, _ := run(t, 0, "status", "--cluster", "cluster-0011", "-o", "json")
		var v hubclient.StatusView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Assignments) != 3 || v.Assignments[0].Cluster != "cluster-0011" || v.Assignments[0].Conflicts != 1 {
			t.Errorf("status --cluster cluster-0011: %+v", v.Assignments)
		}
	})
	t.Run("skew names the clusters on the old revision", func(t *testing.T) {
		out, _ := run(t, 0, "skew", "release-02", "--max-names", "4")
		want := fmt.Sprintf("release-02: 51 of 60 on %s (desired); 6 on %s: cluster-0003, cluster-0013, cluster-0023, cluster-0033 and 2 more; 3 failed on %s: cluster-0007, cluster-0027, cluster-0047\n",
			short(f.Revision), short(hubtest.OldRevision), short(f.Revision))
		if out != want {
			t.Errorf("skew release-02:\n got %q\nwant %q", out, want)
		}
		out, _ = run(t, 0, "skew", "-o", "json")
		var v hubclient.SkewView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Releases) != 3 || v.Releases[0].Skewed != 11 || len(v.Releases[0].Groups) != 3 || len(v.Releases[0].Groups[1].Clusters) != 6 || !v.Releases[0].Groups[2].Failed || v.Releases[0].Groups[2].Count != 5 {
			t.Errorf("skew -o json: %+v", v.Releases)
		}
	})
	t.Run("drift lists objects with paths, healed or reported", func(t *testing.T) {
		out, _ := run(t, 0, "drift", "--cluster", "cluster-0015")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "CLUSTER RELEASE NAMESPACE OBJECT PATHS STATE REPORTED" {
			t.Fatalf("drift --cluster cluster-0015:\n%s", out)
		}
		for i, want := range []string{
			"cluster-0015 release-00 apps configmap/settings-release-00 .data.level healed",
			"cluster-0015 release-01 apps configmap/settings-release-01 .data.level reported",
			"cluster-0015 release-02 apps configmap/settings-release-02 .data.level healed",
		} {
			if !strings.HasPrefix(strings.Join(strings.Fields(lines[i+1]), " "), want) {
				t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i+1], want)
			}
		}
		out, _ = run(t, 0, "drift", "--release", "release-01", "-o", "json")
		var v hubclient.DriftView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Objects) != 6 {
			t.Errorf("drift --release release-01: %d objects, want 6 (clusters 5, 15, ... 55)", len(v.Objects))
		}
		if out, _ := run(t, 0, "drift", "--cluster", "cluster-0000"); out != "No drift reported.\n" {
			t.Errorf("drift of a clean cluster: %q", out)
		}
	})
	t.Run("get lists clusters, releases and sources", func(t *testing.T) {
		out, _ := run(t, 0, "get", "releases")
		if want := "NAME SOURCE PATH NAMESPACE CLUSTERS release-00 apps apps/release-00 apps 60 release-01 apps apps/release-01 apps 60 release-02 apps apps/release-02 apps 60"; strings.Join(strings.Fields(out), " ") != want {
			t.Errorf("get releases:\n%s\nwant (words) %s", out, want)
		}
		out, _ = run(t, 0, "get", "clusters")
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 61 || !strings.Contains(strings.Join(strings.Fields(lines[50]), " "), "cluster-0049 env=staging,region=us false 2h0m") {
			t.Errorf("get clusters: %d lines; cluster-0049's: %q", len(lines), lines[min(50, len(lines)-1)])
		}
		out, _ = run(t, 0, "get", "sources", "-o", "json")
		var srcs []hubclient.SourceView
		if err := json.Unmarshal([]byte(out), &srcs); err != nil || len(srcs) != 1 || srcs[0].Name != "apps" || srcs[0].Revision != f.Revision {
			t.Errorf("get sources -o json (%v): %s", err, out)
		}
	})
	t.Run("cluster show has conditions and assignments", func(t *testing.T) {
		out, _ := run(t, 0, "cluster", "show", "cluster-0007")
		words := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{
			"Agent version: v0.0.0-hubtest",
			"Outbox: unknown (no heartbeat since the hub started)",
			"Reachable True AgentReporting",
			"Converged False NotReady 3 of 3 assignments not Ready: release-00 Failed, release-01 Failed, release-02 Failed",
			"Failed True ApplyFailed release-00: ConfigMap/apps/settings-release-00 apply failed: admission webhook denied the request; release-01:",
			"Drifted False NoDrift",
			"release-02 " + short(f.Revision) + " " + short(f.Revision) + " Failed Failed - 0 2 ConfigMap/apps/settings-release-02 apply failed",
		} {
			if !strings.Contains(words, want) {
				t.Errorf("cluster show lacks %q:\n%s", want, out)
			}
		}
		out, _ = run(t, 0, "cluster", "show", "cluster-0049", "-o", "json")
		var v hubclient.ClusterView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Status) != 3 || v.Status[0].Phase != "Unreachable" || v.Status[0].ReportedPhase != "Ready" || v.Conditions[0].Status != "False" || v.Conditions[0].Reason != "Silent" {
			t.Errorf("cluster show cluster-0049 -o json: status %+v conditions %+v", v.Status, v.Conditions)
		}
	})
}
