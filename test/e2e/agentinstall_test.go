package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/cli"
	"github.com/flotilla/flotilla/internal/cli/agentcmd"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
)

// TestAgentInstallJoins installs the agent into a cluster with `flotilla agent install`, then
// runs the agent as the installed Deployment says (its args), with the join token read from
// the Secret as the kubelet would mount it: the agent joins the hub with that file alone and
// converges. (No kubelet here: the test plays the pod, outside the cluster, with the
// cluster's kubeconfig instead of its ServiceAccount.)
func TestAgentInstallJoins(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	rp := newRepo(t, repoDir, fleetFiles(repoURL))
	f := newFleet(t, repoURL, map[string]map[string]string{"eu-prod": {"env": "prod", "region": "eu"}})
	edge := clustertest.Start(t, localcluster.Options{Name: "edge-2"})
	ctx := t.Context()

	j, err := f.client.AddCluster(ctx, "edge-2", map[string]string{"env": "prod", "region": "eu"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "edge-2.token")
	if err := os.WriteFile(tokenFile, []byte(j.JoinToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := cli.Run(ctx, []string{"agent", "install", "--hub", f.hub.AgentURL(), "--join-token-file", tokenFile, "--kubeconfig", edge.KubeconfigPath()}, &out, &errOut); code != 0 {
		t.Fatalf("agent install: exit %d: %s", code, errOut.String())
	}

	// The pod: the Deployment's args, the Secret's key as the mounted file, the state dir.
	cs := kubernetes.NewForConfigOrDie(edge.RESTConfig())
	d, err := cs.AppsV1().Deployments("flotilla-system").Get(ctx, "flotilla-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := cs.CoreV1().Secrets("flotilla-system").Get(ctx, "flotilla-agent-join", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mounted := filepath.Join(dir, "join", "token")
	if err := os.MkdirAll(filepath.Dir(mounted), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mounted, s.Data["token"], 0o400); err != nil {
		t.Fatal(err)
	}
	// The agent's image: its entrypoint is flotilla-agent, which the args are given to.
	if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "ghcr.io/flotilla/flotilla-agent:") {
		t.Errorf("the Deployment runs image %s, want the agent's own", img)
	}
	var args []string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--join-token="):
			t.Fatalf("the Deployment passes the token as an argument: %s", a)
		case a == "--join-token-file=/etc/flotilla/join/token":
			a = "--join-token-file=" + mounted
		case a == "--state-dir=/state":
			a = "--state-dir=" + filepath.Join(dir, "state")
		}
		args = append(args, a)
	}
	args = append(args, "--kubeconfig", edge.KubeconfigPath(), "--heartbeat-interval", "1s", "--report-interval", "200ms", "--max-backoff", "1s", "--log-format", "text")
	agentCtx, stop := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var agentErr bytes.Buffer
	go func() { done <- agentcmd.Run(agentCtx, args, &bytes.Buffer{}, &agentErr) }()
	t.Cleanup(func() {
		stop()
		<-done
	})

	commit := rp.commit("with edge-2", map[string]string{"README.md": "edge-2\n"})
	f.waitStatus("edge-2 joined with the installed token file and converged", 2*time.Minute,
		converged(commit, map[string][]string{"eu-prod": {"baseline", "greeter"}, "edge-2": {"baseline", "greeter"}}))
	if got, ok := configMapData(t, edge, "greeter", "greeter", "message"); !ok || got == "" {
		t.Errorf("greeter not applied on edge-2: %q", got)
	}
	select {
	case code := <-done:
		t.Fatalf("agent exited with %d: %s", code, agentErr.String())
	default:
	}
}
