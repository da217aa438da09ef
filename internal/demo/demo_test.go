package demo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The try-step that commits to the fleet repository works however often it runs: each run
// makes a new commit (a second run used to fail with "nothing to commit").
func TestTryCommitIsRepeatable(t *testing.T) {
	t.Parallel()
	repo := filepath.Join(t.TempDir(), "fleet-repo")
	if err := createFleetRepo(repo); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(repo, "apps", "baseline", "eu", "settings.yaml")
	heads := map[string]bool{}
	for run, want := range []string{"dataResidency: eu-strict", "dataResidency: eu-only", "dataResidency: eu-strict"} {
		cmd := exec.Command("bash", "-c", TryCommit)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "FLEET_REPO="+repo, "HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d of %s: %v\n%s", run+1, TryCommit, err, out)
		}
		data, err := os.ReadFile(settings)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), want) {
			t.Errorf("after run %d, settings.yaml lacks %q:\n%s", run+1, want, data)
		}
		head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatal(err)
		}
		heads[string(head)] = true
	}
	if len(heads) != 3 {
		t.Errorf("3 runs made %d distinct commits, want 3", len(heads))
	}
}

// Sourcing demo.env exports every variable, the kubeconfig of each cluster included.
func TestEnvFileExportsEverything(t *testing.T) {
	t.Parallel()
	env := envFile([][2]string{
		{"FLOTILLA_HUB", "https://127.0.0.1:8444"}, {"FLOTILLA_DASHBOARD", "https://127.0.0.1:8444/#token=ab%2Bc"},
		{"KUBECONFIG_CLUSTER_1", "/tmp/demo/clusters/cluster-1/kubeconfig"}, {"KUBECONFIG_CLUSTER_2", "/tmp/my demo/cluster 2/kubeconfig"},
	})
	path := filepath.Join(t.TempDir(), "demo.env")
	if err := os.WriteFile(path, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", `source "$1" && bash -c 'printf "%s|%s|%s|%s" "$FLOTILLA_HUB" "$FLOTILLA_DASHBOARD" "$KUBECONFIG_CLUSTER_1" "$KUBECONFIG_CLUSTER_2"'`, "-", path).CombinedOutput()
	if err != nil {
		t.Fatalf("source demo.env: %v\n%s", err, out)
	}
	want := "https://127.0.0.1:8444|https://127.0.0.1:8444/#token=ab%2Bc|/tmp/demo/clusters/cluster-1/kubeconfig|/tmp/my demo/cluster 2/kubeconfig"
	if string(out) != want {
		t.Errorf("a child process of a shell that sourced demo.env sees\n %q\nwant %q\ndemo.env:\n%s", out, want, env)
	}
}
