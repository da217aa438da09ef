package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
	"github.com/flotilla/flotilla/internal/pki"
)

func newTestJoinToken(t *testing.T) string {
	t.Helper()
	tok, err := pki.NewJoinToken("edge-1", strings.Repeat("cd", 32))
	if err != nil {
		t.Fatal(err)
	}
	return tok.Encode()
}

// runWithStdin runs flotilla as Run does, with stdin for --join-token-file -.
func runWithStdin(ctx context.Context, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetIn(stdin)
	root.SetArgs(args)
	code = 0
	if err := root.ExecuteContext(ctx); err != nil {
		errOut.WriteString("Error: " + err.Error() + "\n")
		code = 1
		var ue usageError
		if asUsage(err, &ue) {
			code = 2
		}
	}
	return code, out.String(), errOut.String()
}

func asUsage(err error, ue *usageError) bool {
	for e := err; e != nil; {
		if u, ok := e.(usageError); ok {
			*ue = u
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAgentInstallRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := newTestJoinToken(t)
	good := writeFile(t, dir, "good", tok+"\n")
	empty := writeFile(t, dir, "empty", "\n")
	big := writeFile(t, dir, "big", strings.Repeat("x", 5000))
	kubeconfig := writeFile(t, dir, "kubeconfig", "apiVersion: v1\nkind: Config\n")
	hub := "https://hub.example.com:8443"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no token", []string{"agent", "install", "--hub", hub}, `--join-token-file or --join-token is required: the token from "flotilla cluster add NAME"`},
		{"two tokens", []string{"agent", "install", "--hub", hub, "--join-token", tok, "--join-token-file", good}, "give the join token once: --join-token or --join-token-file, not both"},
		{"missing token file", []string{"agent", "install", "--hub", hub, "--join-token-file", filepath.Join(dir, "nope")}, "--join-token-file: open " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{"empty token file", []string{"agent", "install", "--hub", hub, "--join-token-file", empty}, "--join-token-file " + empty + ` is empty: it should hold the token from "flotilla cluster add"`},
		{"huge token file", []string{"agent", "install", "--hub", hub, "--join-token-file", big}, "--join-token-file " + big + ": larger than 4096 bytes, not a join token"},
		{"a kubeconfig as token file", []string{"agent", "install", "--hub", hub, "--join-token-file", kubeconfig}, "--join-token-file " + kubeconfig + ": join token: not a flotilla token"},
		{"garbage token", []string{"agent", "install", "--hub", hub, "--join-token", "hello"}, "the join token: join token: not a flotilla token"},
		{"no hub", []string{"agent", "install", "--join-token", tok}, "--hub is required: the hub's agent endpoint, https://HOST:PORT"},
		{"plain-HTTP hub", []string{"agent", "install", "--hub", "http://hub:8443", "--join-token", tok}, `--hub "http://hub:8443": want the hub's agent endpoint as https://HOST:PORT`},
		{"-o yaml without --dry-run", []string{"agent", "install", "--hub", hub, "--join-token", tok, "-o", "yaml"}, "-o yaml prints the manifests: add --dry-run"},
		{"-o text with --dry-run", []string{"agent", "install", "--hub", hub, "--join-token", tok, "--dry-run", "-o", "text"}, "-o text: --dry-run prints the manifests, as yaml or json"},
		{"unknown --dry-run", []string{"agent", "install", "--hub", hub, "--join-token", tok, "--dry-run=maybe"}, `--dry-run "maybe": want client (print the manifests), server (validate them in the cluster) or none`},
		{"arguments", []string{"agent", "install", "edge-1"}, `flotilla agent install: takes no arguments, got "edge-1"`},
		{"the agent with two tokens", []string{"agent", "--hub", hub, "--state-dir", dir, "--join-token", tok, "--join-token-file", good}, "give the join token once: --join-token or --join-token-file, not both"},
		{"the agent with an empty token file", []string{"agent", "--hub", hub, "--state-dir", dir, "--join-token-file", empty}, "--join-token-file " + empty + " is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := Run(t.Context(), tc.args, &out, &errOut)
			if code != 2 || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit code %d, stderr:\n%s\nwant 2 and %q", code, errOut.String(), tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout: %s", out.String())
			}
		})
	}
}

func TestReadJoinTokenFile(t *testing.T) {
	t.Parallel()
	tok := newTestJoinToken(t)
	p := writeFile(t, t.TempDir(), "token", "  "+tok+"\r\n")
	got, err := readJoinTokenFile(p, nil)
	if err != nil || got != tok {
		t.Errorf("file: %q, %v; want %q", got, err, tok)
	}
	got, err = readJoinTokenFile("-", strings.NewReader(tok+"\n"))
	if err != nil || got != tok {
		t.Errorf("stdin: %q, %v; want %q", got, err, tok)
	}
	if _, err := readJoinTokenFile("-", strings.NewReader("")); err == nil || err.Error() != `--join-token-file standard input is empty: it should hold the token from "flotilla cluster add"` {
		t.Errorf("empty stdin: %v", err)
	}
}

func TestAgentInstallHelp(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := Run(t.Context(), []string{"agent", "install", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Examples:", "flotilla agent install --hub https://hub.example.com:8443 --join-token-file edge-1.token", "--dry-run -o yaml", "--platform-admin", "--join-token-file"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	Run(t.Context(), []string{"agent", "--help"}, &out, &errOut)
	if !strings.Contains(out.String(), "install") || !strings.Contains(out.String(), "--join-token-file") {
		t.Errorf("flotilla agent --help names neither install nor --join-token-file:\n%s", out.String())
	}
}

// flotilla agent install against a real API server: it creates the agent's objects, a second
// run changes nothing, the token is in the Secret only, and what --dry-run -o yaml prints is
// exactly what it applies (kubectl applies it cleanly, and an install over it changes nothing).
func TestAgentInstallCluster(t *testing.T) {
	t.Parallel()
	clusters := clustertest.StartAll(t, "agent-install", "agent-install-kubectl")
	c, other := clusters["agent-install"], clusters["agent-install-kubectl"]
	ctx := t.Context()
	tok := newTestJoinToken(t)
	tokenFile := writeFile(t, t.TempDir(), "token", tok+"\n")
	hub := "https://hub.example.com:8443"
	args := []string{"agent", "install", "--hub", hub, "--join-token-file", tokenFile, "--kubeconfig", c.KubeconfigPath()}

	code, out, errOut := runWithStdin(ctx, nil, args...)
	if code != 0 {
		t.Fatalf("install: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"namespace/flotilla-system created",
		"serviceaccount/flotilla-agent created (namespace flotilla-system)",
		"role.rbac.authorization.k8s.io/flotilla-agent-inventories created (namespace flotilla-system)",
		"clusterrole.rbac.authorization.k8s.io/flotilla-agent created",
		"clusterrolebinding.rbac.authorization.k8s.io/flotilla-agent created",
		"secret/flotilla-agent-join created (namespace flotilla-system)",
		"persistentvolumeclaim/flotilla-agent-state created (namespace flotilla-system)",
		"deployment.apps/flotilla-agent created (namespace flotilla-system)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "platform-admin") {
		t.Errorf("platform-admin bound without --platform-admin:\n%s", out)
	}
	if !strings.Contains(errOut, "Agent installed in namespace flotilla-system (9 of 9 objects created or changed)") {
		t.Errorf("stderr: %s", errOut)
	}

	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	d, err := cs.AppsV1().Deployments("flotilla-system").Get(ctx, "flotilla-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(d)
	if secretPart := strings.Split(tok, ".")[3]; strings.Contains(string(spec), secretPart) {
		t.Errorf("the Deployment holds the token: %s", spec)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--join-token-file=/etc/flotilla/join/token") || !slices.Contains(args, "--hub="+hub) {
		t.Errorf("agent args %q", args)
	}
	s, err := cs.CoreV1().Secrets("flotilla-system").Get(ctx, "flotilla-agent-join", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data["token"]) != tok {
		t.Errorf("Secret holds %q, want the token", s.Data["token"])
	}
	before := d.ResourceVersion

	t.Run("a second run changes nothing", func(t *testing.T) {
		code, out, errOut := runWithStdin(ctx, nil, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if n := strings.Count(out, " unchanged"); n != 9 {
			t.Errorf("%d objects unchanged, want 9:\n%s", n, out)
		}
		if !strings.Contains(errOut, "Nothing changed: the agent is installed in namespace flotilla-system as asked.") {
			t.Errorf("stderr: %s", errOut)
		}
		d, err := cs.AppsV1().Deployments("flotilla-system").Get(ctx, "flotilla-agent", metav1.GetOptions{})
		if err != nil || d.ResourceVersion != before {
			t.Errorf("Deployment rewritten: resource version %s, then %s (%v)", before, d.ResourceVersion, err)
		}

		code, out, errOut = runWithStdin(ctx, nil, append(args, "-o", "json")...)
		if code != 0 {
			t.Fatalf("-o json: exit %d: %s", code, errOut)
		}
		var results []struct{ Ref, Namespace, Action string }
		if err := json.Unmarshal([]byte(out), &results); err != nil {
			t.Fatalf("-o json: %v:\n%s", err, out)
		}
		if len(results) != 9 || results[8].Ref != "deployment.apps/flotilla-agent" || results[8].Action != "unchanged" {
			t.Errorf("-o json: %+v", results)
		}
	})

	// On a cluster of its own: one agent per cluster, and this one runs in another namespace.
	t.Run("--dry-run -o yaml prints what kubectl applies and the install then leaves alone", func(t *testing.T) {
		c := other
		cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
		dryArgs := []string{"agent", "install", "--hub", hub, "--join-token-file", "-", "--namespace", "edge-agent", "--platform-admin", "--dry-run", "-o", "yaml"}
		code, yamlOut, errOut := runWithStdin(ctx, strings.NewReader(tok+"\n"), dryArgs...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		objs := clustertest.Objects(t, yamlOut)
		if len(objs) != 11 {
			t.Errorf("%d objects printed, want 11 (two namespaces and the platform-admin binding)", len(objs))
		}
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "edge-agent", metav1.GetOptions{}); err == nil {
			t.Fatal("--dry-run created namespace edge-agent")
		}
		if out, err := c.Kubectl(ctx, strings.NewReader(yamlOut), "apply", "--server-side", "--field-manager=kubectl", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply of the printed manifests: %v", err)
		} else if !strings.Contains(string(out), "deployment.apps/flotilla-agent serverside-applied") {
			t.Errorf("kubectl: %s", out)
		}
		code, out, errOut := runWithStdin(ctx, strings.NewReader(tok), "agent", "install", "--hub", hub, "--join-token-file", "-", "--namespace", "edge-agent", "--platform-admin", "--kubeconfig", c.KubeconfigPath())
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if n := strings.Count(out, "\n"); n != 11 {
			t.Errorf("%d objects installed, want 11:\n%s", n, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.Contains(line, " unchanged") {
				t.Errorf("install over kubectl's apply of its own manifests: %s", line)
			}
		}
	})

	t.Run("--dry-run=server validates against the API server and stores nothing", func(t *testing.T) {
		code, out, errOut := runWithStdin(ctx, nil, "agent", "install", "--hub", "https://hub-2.example.com:8443", "--join-token-file", tokenFile, "--kubeconfig", c.KubeconfigPath(), "--dry-run=server")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !strings.Contains(out, "deployment.apps/flotilla-agent configured (namespace flotilla-system) (server dry run)") {
			t.Errorf("stdout: %s", out)
		}
		if !strings.Contains(errOut, "nothing was stored (dry run)") {
			t.Errorf("stderr: %s", errOut)
		}
		d, err := cs.AppsV1().Deployments("flotilla-system").Get(ctx, "flotilla-agent", metav1.GetOptions{})
		if err != nil || d.ResourceVersion != before {
			t.Errorf("the dry-run changed the Deployment (%v)", err)
		}
	})
}
