package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// startAgentOnClock replaces the fleet's agent of a cluster by one on clk (the harness's
// agents run on the wall clock): same state dir, so same identity and cached desired state.
func (f *fleet) startAgentOnClock(name string, clk *offsetClock) {
	f.t.Helper()
	f.stopAgent(name)
	a, err := agent.New(f.t.Context(), agent.Options{
		HubURL: f.hub.AgentURL(), RESTConfig: f.clusters[name].RESTConfig(),
		StateDir: filepath.Join(f.dir, "agents", name), Logger: f.logger("agent-" + name), Clock: clk,
		HeartbeatInterval: time.Second, ReportInterval: 200 * time.Millisecond, MaxBackoff: time.Second,
	})
	if err != nil {
		f.t.Fatalf("agent %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil {
			f.t.Errorf("agent: %v", err)
		}
		a.Close()
	}()
	f.mu.Lock()
	f.agents[name] = func() { cancel(); <-done }
	f.mu.Unlock()
}

const windowFleet = webFleet + `---
apiVersion: flotilla.dev/v1alpha1
kind: Window
metadata: {name: change-freeze}
spec:
  type: deny
  schedule: "%s"
  duration: 2h
  timeZone: UTC
  releases: [web]
`

func webConfigMap(version string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: " + version + "}\n"
}

// TestDenyWindowHoldsWhileTheHubIsDown: a deny window blocks a new revision even while the
// hub is stopped, and the change lands when the window opens. The agent's clock is moved,
// not waited for.
func TestDenyWindowHoldsWhileTheHubIsDown(t *testing.T) {
	t.Parallel()
	clk := &offsetClock{}
	// The window opens an hour from now (on the agent's clock), for two hours.
	opens := clk.Now().UTC().Add(time.Hour).Truncate(time.Minute)
	schedule := fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour())
	srcDir, fleetDir := t.TempDir(), t.TempDir()
	src := newRepo(t, srcDir, map[string]string{"web/web.yaml": webConfigMap("v1")})
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": fmt.Sprintf(windowFleet, srcDir, schedule)})
	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{"eu-1": {"env": "prod"}})
	f.startAgentOnClock("eu-1", clk)
	eu1 := f.clusters["eu-1"]
	version := func() string {
		v, _ := configMapData(t, eu1, "web", "web", "version")
		return v
	}

	// Before the window: v1 lands as usual.
	f.waitStatus("v1 applied before the window", 90*time.Second, converged("", map[string][]string{"eu-1": {"web"}}))
	if v := version(); v != "v1" {
		t.Fatalf("web's version %q before the window, want v1", v)
	}

	// Inside the window, a new commit is held: the agent keeps v1 and says why.
	clk.advance(opens.Sub(clk.Now()) + time.Minute)
	v2 := src.commit("web v2", map[string]string{"web/web.yaml": webConfigMap("v2")})
	closes := opens.Add(2 * time.Hour).Format("15:04")
	st := f.waitStatus("v2 held by the window", 90*time.Second, func(st hubclient.StatusView) bool {
		for _, a := range st.Assignments {
			if a.Release == "web" && containsCommit(a.DesiredRevision, v2) && a.Phase == hubclient.PhaseWaiting {
				return true
			}
		}
		return false
	})
	for _, a := range st.Assignments {
		if want := `window "change-freeze" closes ` + closes + ` UTC`; a.Waiting != want {
			t.Errorf("waiting %q, want %q", a.Waiting, want)
		}
		if containsCommit(a.AppliedRevision, v2) {
			t.Errorf("applied revision %s is the held one", a.AppliedRevision)
		}
	}
	if v := version(); v != "v1" {
		t.Fatalf("web's version %q inside the window, want v1", v)
	}

	// The hub stops. The agent keeps reconciling v1 (it heals a change to it) and holds v2.
	f.hubStop()
	cs := kubernetes.NewForConfigOrDie(eu1.RESTConfig())
	cm, err := cs.CoreV1().ConfigMaps("web").Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["version"] = "tampered"
	if _, err := cs.CoreV1().ConfigMaps("web").Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 60*time.Second, eventually.True("v1 healed with the hub down, inside the window", func() bool { return version() != "tampered" }))
	if v := version(); v != "v1" {
		t.Fatalf("web's version %q with the hub down inside the window, want v1", v)
	}

	// The window closes: v2 lands, with the hub still down (the agent fetched its artifact
	// while it was held).
	clk.advance(2 * time.Hour)
	eventually.Within(t, 60*time.Second, equal("web's version when the window closes, hub down", version, "v2"))

	// Back up, the hub hears that v2 is Ready.
	f.startHub()
	f.waitStatus("v2 Ready after the window", 90*time.Second, converged(v2, map[string][]string{"eu-1": {"web"}}))
	if st, err := f.client.Status(t.Context()); err == nil {
		for _, a := range st.Assignments {
			if strings.TrimSpace(a.Waiting) != "" {
				t.Errorf("%s still waiting: %q", a.Release, a.Waiting)
			}
		}
	}
}
