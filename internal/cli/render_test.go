package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// renderTree is an artifact directory: a plain directory in web/ and an overlay in apps/prod whose
// base uses the cluster's variables.
func renderTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"web/web.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data:
  greeting: hello
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - port: 80
`,
		"apps/base/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/base/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-info
data:
  name: ${cluster_name}
  region: ${cluster_label_region:=unknown}
`,
		"apps/prod/kustomization.yaml": "namespace: prod\nresources: [../base]\n",
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func runRender(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRenderCommand(streams{out: &out, errOut: &errOut})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

func TestRenderCommandPrintsYAMLDocuments(t *testing.T) {
	t.Parallel()
	root := renderTree(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{
			name: "plain directory",
			args: []string{root, "--path", "web"},
			want: `apiVersion: v1
data:
  greeting: hello
kind: ConfigMap
metadata:
  name: web
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - port: 80
`,
		},
		{
			name: "overlay with variables",
			args: []string{root, "--path", "apps/prod", "--var", "cluster_name=edge-1", "--var", "cluster_label_region=eu-west"},
			want: `apiVersion: v1
data:
  name: edge-1
  region: eu-west
kind: ConfigMap
metadata:
  name: cluster-info
  namespace: prod
`,
		},
		{
			name: "a later --var wins and values may hold = and commas",
			args: []string{root, "--path", "apps/prod", "--var", "cluster_name=x", "--var", "cluster_name=a=b,c"},
			want: `apiVersion: v1
data:
  name: a=b,c
  region: unknown
kind: ConfigMap
metadata:
  name: cluster-info
  namespace: prod
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := runRender(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderCommandPrintsAJSONList(t *testing.T) {
	t.Parallel()
	got, err := runRender(t, renderTree(t), "--path", "web", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal([]byte(got), &list); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	want := map[string]any{
		"apiVersion": "v1",
		"kind":       "List",
		"items": []any{
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web"}, "data": map[string]any{"greeting": "hello"}},
			map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web"}, "spec": map[string]any{"ports": []any{map[string]any{"port": float64(80)}}}},
		},
	}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

func TestRenderCommandErrors(t *testing.T) {
	t.Parallel()
	root := renderTree(t)
	tests := []struct {
		name      string
		args      []string
		wantUsage bool // a usageError: exit code 2 once registered
		wantErr   string
	}{
		{name: "--var without =", args: []string{root, "--var", "cluster_name"}, wantUsage: true, wantErr: `--var "cluster_name": want NAME=VALUE`},
		{name: "--var without a name", args: []string{root, "--var", "=x"}, wantUsage: true, wantErr: `--var "=x": want NAME=VALUE`},
		{name: "no directory", args: nil, wantUsage: true, wantErr: "render takes one argument, the artifact directory; got 0"},
		{name: "two directories", args: []string{root, root}, wantUsage: true, wantErr: "got 2"},
		{name: "bad output format", args: []string{root, "-o", "table"}, wantErr: `want yaml or json, got "table"`},
		{name: "undefined variable", args: []string{root, "--path", "apps/prod"}, wantErr: `render apps/base/cm.yaml: ConfigMap/prod/cluster-info: undefined variable "cluster_name"`},
		{name: "path outside the directory", args: []string{root, "--path", "../x"}, wantErr: `path "../x" points outside the artifact root`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := runRender(t, tt.args...)
			if err == nil {
				t.Fatalf("no error; output:\n%s", out)
			}
			var ue usageError
			if got := errors.As(err, &ue); got != tt.wantUsage {
				t.Errorf("usage error = %v, want %v (%v)", got, tt.wantUsage, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestRenderCommandHelp(t *testing.T) {
	t.Parallel()
	out, err := runRender(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Usage:", "render DIR", "Examples:", "flotilla render ./artifact --path apps/prod", "--var", "v1 List", "-o, --output"} {
		if !strings.Contains(out, want) {
			t.Errorf("help does not contain %q:\n%s", want, out)
		}
	}
}
