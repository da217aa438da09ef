package e2e

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/cli"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestViewsDriftAndUnreachable makes drift with kubectl on a real cluster and checks that
// `flotilla drift` lists it with its field path (reported for a release with selfHeal: false,
// healed for one with selfHeal: true), that status and cluster show say so, and that a
// cluster whose agent stops is shown Unreachable after --unreachable-after, never Ready.
func TestViewsDriftAndUnreachable(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	release := func(name string, selfHeal bool, interval string) string {
		return fmt.Sprintf(`---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: %s}
spec:
  source: apps
  path: apps/%s
  targets: [{selector: {}}]
  namespace: %s
  createNamespace: true
  selfHeal: %v
  interval: %s
`, name, name, name, selfHeal, interval)
	}
	configMap := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {level: info, owner: " + name + "}\n"
	}
	newRepo(t, repoDir, map[string]string{
		"fleet/sources.yaml":       fmt.Sprintf("apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: apps}\nspec:\n  git: {url: %s, branch: main}\n  interval: 1h\n", repoURL),
		"fleet/releases.yaml":      release("watched", false, "3s") + release("healed", true, "20s"),
		"apps/watched/config.yaml": configMap("watched"),
		"apps/healed/config.yaml":  configMap("healed"),
	})
	f := newFleet(t, repoURL, map[string]map[string]string{"views-a": {"env": "prod"}, "views-b": {"env": "prod"}},
		func(o *hub.Options) { o.UnreachableAfter = 4 * time.Second })
	f.waitStatus("first convergence", 2*time.Minute, converged("", map[string][]string{"views-a": {"healed", "watched"}, "views-b": {"healed", "watched"}}))

	conn := []string{"--hub", f.hub.APIURL(), "--token", f.hub.AdminToken(), "--ca", f.hub.CAPath()}
	flotilla := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := cli.Run(t.Context(), append(args, conn...), &out, &errOut); code != 0 {
			t.Fatalf("flotilla %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		return out.String()
	}
	words := func(s string) string { return strings.Join(strings.Fields(s), " ") }

	for _, ns := range []string{"watched", "healed"} {
		if _, err := f.clusters["views-a"].Kubectl(t.Context(), nil, "-n", ns, "patch", "configmap/settings", "--type=merge", "-p", `{"data":{"level":"debug"}}`); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("drift lists the field path, reported without selfHeal", func(t *testing.T) {
		var out string
		eventually.Within(t, time.Minute, eventually.True("drift of watched reported", func() bool {
			out = flotilla("drift", "--release", "watched")
			return strings.Contains(words(out), "views-a watched watched configmap/settings .data.level (kubectl-patch) reported")
		}))
		if strings.Contains(out, "views-b") {
			t.Errorf("drift lists the untouched cluster:\n%s", out)
		}
		if got, _ := configMapData(t, f.clusters["views-a"], "watched", "settings", "level"); got != "debug" {
			t.Errorf("selfHeal: false took the change back: level = %q", got)
		}
		st := flotilla("status", "watched")
		if !strings.Contains(words(st), "views-a") || !strings.Contains(words(st), "Ready - drifted 0") {
			t.Errorf("status watched does not show the drift:\n%s", st)
		}
		show := words(flotilla("cluster", "show", "views-a"))
		for _, want := range []string{"Drifted True DriftReported drift in watched", "Reachable True AgentReporting"} {
			if !strings.Contains(show, want) {
				t.Errorf("cluster show views-a lacks %q:\n%s", want, show)
			}
		}
		// Agents here heartbeat every second, with their outbox depth.
		if !regexp.MustCompile(`Outbox: \d+ reports waiting`).MatchString(show) {
			t.Errorf("cluster show views-a has no outbox depth:\n%s", show)
		}
	})
	t.Run("drift healed with selfHeal", func(t *testing.T) {
		// healed reconciles every 20s: a sync makes views-a's agent reconcile it now, with its
		// selfHeal, rather than the test waiting out the interval.
		if _, err := f.client.Sync(t.Context(), "healed", hubclient.SyncRequest{Cluster: "views-a"}); err != nil {
			t.Fatal(err)
		}
		eventually.Within(t, time.Minute, eventually.True("drift of healed healed", func() bool {
			return strings.Contains(words(flotilla("drift", "--cluster", "views-a")), "views-a healed healed configmap/settings .data.level (kubectl-patch) healed")
		}))
		eventually.Within(t, 10*time.Second, eventually.True("level taken back", func() bool {
			got, _ := configMapData(t, f.clusters["views-a"], "healed", "settings", "level")
			return got == "info"
		}))
	})
	t.Run("a silent cluster is Unreachable, never Ready", func(t *testing.T) {
		// The silence passes --unreachable-after on the hub's clock, not by waiting it out.
		f.silence("views-b")
		f.clock.advance(f.hubOpts.UnreachableAfter)
		st := f.waitStatus("views-b unreachable", 30*time.Second, func(st hubclient.StatusView) bool {
			n := 0
			for _, a := range st.Assignments {
				if a.Cluster == "views-b" && a.Phase == hubclient.PhaseUnreachable && a.ReportedPhase == hubclient.PhaseReady {
					n++
				}
			}
			return n == 2
		})
		for _, r := range st.Releases {
			if r.Unreachable != 1 || r.Ready != 1 {
				t.Errorf("release %s: %+v, want 1 ready and 1 unreachable", r.Release, r)
			}
		}
		if out := words(flotilla("status", "--cluster", "views-b")); !strings.Contains(out, "Unreachable (last Ready)") || strings.Contains(out, " Ready Current") {
			t.Errorf("status --cluster views-b: %s", out)
		}
		if out := words(flotilla("cluster", "show", "views-b")); !strings.Contains(out, "Reachable False Silent agent last heard from") {
			t.Errorf("cluster show views-b: %s", out)
		}
	})
}
