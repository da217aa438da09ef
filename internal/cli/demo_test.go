package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/demo"
	"github.com/flotilla/flotilla/internal/eventually"
)

// TestDemo runs `flotilla demo` as the README tells a new user to, with one cluster, then uses
// the demo.env it writes to run `flotilla status -o json`, as a script would.
func TestDemo(t *testing.T) {
	dataDir := t.TempDir()
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- Run(ctx, []string{"demo", "--clusters", "1", "--data-dir", dataDir}, &out, &errOut) }()

	eventually.Within(t, 4*time.Minute, func() error {
		select {
		case code := <-done:
			t.Fatalf("demo exited early with %d:\n%s\n%s", code, out.String(), errOut.String())
		default:
		}
		if !strings.Contains(out.String(), "Press Ctrl-C to stop.") {
			return fmt.Errorf("demo not converged (no \"Press Ctrl-C to stop.\"):\n%s\n%s", out.String(), errOut.String())
		}
		return nil
	})
	env := readEnvFile(t, filepath.Join(dataDir, "demo.env"))
	for _, k := range []string{"FLOTILLA_HUB", "FLOTILLA_TOKEN", "FLOTILLA_CA", "FLEET_REPO", "KUBECONFIG_CLUSTER_1"} {
		if env[k] == "" {
			t.Errorf("demo.env has no %s: %v", k, env)
		}
	}
	if _, err := os.Stat(filepath.Join(env["FLEET_REPO"], ".git")); err != nil {
		t.Errorf("FLEET_REPO is not a Git work tree: %v", err)
	}
	// `source demo.env` exports the kubeconfigs too: kubectl, a child process, sees them.
	if got, err := exec.Command("bash", "-c", `source "$1" && bash -c 'echo "$KUBECONFIG_CLUSTER_1"'`, "-", filepath.Join(dataDir, "demo.env")).Output(); err != nil || strings.TrimSpace(string(got)) != env["KUBECONFIG_CLUSTER_1"] {
		t.Errorf("after source demo.env, a child process sees KUBECONFIG_CLUSTER_1=%q (%v), want %q", got, err, env["KUBECONFIG_CLUSTER_1"])
	}
	// The start logs no WARN (sources not polled yet are INFO) and names each agent's
	// cluster once per line.
	logData, err := os.ReadFile(filepath.Join(dataDir, "demo.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(logData), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Count(l, " cluster=") > 1 {
			t.Errorf("demo log line: %s", l)
		}
	}
	// The printed try-steps include the repeatable commit, which runs twice without error.
	if !strings.Contains(out.String(), demo.TryCommit) {
		t.Errorf("the demo does not print the commit step %q:\n%s", demo.TryCommit, out.String())
	}
	for run := range 2 {
		cmd := exec.Command("bash", "-c", demo.TryCommit)
		cmd.Env = append(os.Environ(), "FLEET_REPO="+env["FLEET_REPO"])
		if got, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("commit step, run %d: %v\n%s", run+1, err, got)
		}
	}

	var st bytes.Buffer
	if code := Run(t.Context(), []string{"status", "-o", "json", "--hub", env["FLOTILLA_HUB"], "--token", env["FLOTILLA_TOKEN"], "--ca", env["FLOTILLA_CA"]}, &st, &st); code != 0 {
		t.Fatalf("status exit %d: %s", code, st.String())
	}
	var status struct {
		Assignments []struct {
			Release, Cluster, DesiredRevision, AppliedRevision, Phase string
			Drifted                                                   bool
			LastSeen                                                  *time.Time
		}
	}
	if err := json.Unmarshal(st.Bytes(), &status); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, st.String())
	}
	releases := map[string]bool{}
	for _, a := range status.Assignments {
		releases[a.Release] = true
		if a.Cluster != "cluster-1" || a.Phase != "Ready" || a.AppliedRevision != a.DesiredRevision || a.DesiredRevision == "" || a.LastSeen == nil {
			t.Errorf("assignment not converged: %+v", a)
		}
	}
	// cluster-1 is env=prod region=eu: baseline and greeter, not staging-tools.
	if !releases["baseline"] || !releases["greeter"] || releases["staging-tools"] {
		t.Errorf("releases on cluster-1 = %v, want baseline and greeter", releases)
	}

	t.Run("client verbs against the demo hub", func(t *testing.T) {
		conn := []string{"--hub", env["FLOTILLA_HUB"], "--token", env["FLOTILLA_TOKEN"], "--ca", env["FLOTILLA_CA"]}
		run := func(args ...string) string {
			t.Helper()
			var out, errOut bytes.Buffer
			if code := Run(t.Context(), append(args, conn...), &out, &errOut); code != 0 {
				t.Fatalf("flotilla %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
			}
			return out.String()
		}
		var added struct{ Name, JoinToken string }
		if err := json.Unmarshal([]byte(run("cluster", "add", "extra", "-l", "env=test", "-l", "region=us", "-o", "json")), &added); err != nil {
			t.Fatal(err)
		}
		if added.Name != "extra" || !strings.HasPrefix(added.JoinToken, "flt1.") {
			t.Errorf("cluster add -o json = %+v", added)
		}
		if out := run("get", "clusters"); !strings.Contains(out, "extra") || !strings.Contains(out, "env=test,region=us") {
			t.Errorf("get clusters:\n%s", out)
		}
		run("cluster", "label", "extra", "env=prod")
		// extra has no agent: the greeter is assigned but Pending.
		waitOutput(t, func() string { return run("status", "greeter") }, "extra", "Pending")
		if out := run("cluster", "show", "extra", "-o", "yaml"); !strings.Contains(out, "name: extra") || !strings.Contains(out, "greeter") {
			t.Errorf("cluster show -o yaml:\n%s", out)
		}
		if out := run("get", "releases", "-o", "json"); !strings.Contains(out, `"greeter"`) || !strings.Contains(out, `"extra"`) {
			t.Errorf("get releases -o json:\n%s", out)
		}
		// The same connection from a config file, as a user's ~/.config/flotilla/config.yaml.
		cfg := filepath.Join(t.TempDir(), "config.yaml")
		content := "hub: " + env["FLOTILLA_HUB"] + "\ntoken: " + env["FLOTILLA_TOKEN"] + "\nca: " + env["FLOTILLA_CA"] + "\n"
		if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("FLOTILLA_CONFIG", cfg)
		var fromFile bytes.Buffer
		if code := Run(t.Context(), []string{"get", "clusters"}, &fromFile, &fromFile); code != 0 || !strings.Contains(fromFile.String(), "extra") {
			t.Errorf("get clusters with the config file: exit %d\n%s", code, fromFile.String())
		}
		run("cluster", "remove", "extra")
		if out := run("get", "clusters", "-o", "json"); strings.Contains(out, `"extra"`) {
			t.Errorf("extra still listed after remove:\n%s", out)
		}
	})

	interrupt()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("demo exit code after Ctrl-C = %d\n%s", code, errOut.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("demo did not stop within a minute of Ctrl-C")
	}
}

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "export") {
			env[k] = v
		}
	}
	return env
}

// waitOutput re-runs cmd until its output contains every want, for a few seconds.
func waitOutput(t *testing.T, cmd func() string, want ...string) {
	t.Helper()
	err := eventually.Poll(t.Context(), 5*time.Second, func() error {
		out := cmd()
		for _, w := range want {
			if !strings.Contains(out, w) {
				return fmt.Errorf("output lacks %q:\n%s", w, out)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err) // not fatal, as before: the verbs after it still run
	}
}
