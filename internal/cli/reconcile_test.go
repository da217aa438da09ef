package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
)

// TestReconcileCommand drives `flotilla reconcile` as a script would, against a real API
// server: its printed summary, its JSON and its exit codes.
func TestReconcileCommand(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, localcluster.Options{Name: "cli-reconcile"})
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {region: \"${region:=us-east}\"}\n")
	write("extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: b}\n")
	base := []string{"reconcile", dir, "--kubeconfig", c.KubeconfigPath(), "--name", "web", "-n", "web", "--create-namespace", "--prune"}

	run := func(t *testing.T, extra ...string) (code int, stdout, stderr string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code = Run(t.Context(), append(append([]string{}, base...), extra...), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	steps := []struct {
		name     string
		before   func()
		extra    []string
		wantCode int
		wantOut  []string
		wantErr  []string
	}{
		{name: "creates", extra: []string{"--var", "region=eu-west"}, wantOut: []string{"namespace/web created", "configmap/web-config created", "configmap/extra created"}},
		{name: "unchanged", extra: []string{"--var", "region=eu-west"}, wantOut: []string{"configmap/web-config unchanged", "configmap/extra unchanged"}},
		{name: "dry run reports without writing", extra: []string{"--dry-run"}, wantOut: []string{"configmap/web-config configured (dry run)"}},
		{name: "default applies when the variable is unset", wantOut: []string{"configmap/web-config configured"}},
		{name: "prunes what left the directory", before: func() { os.Remove(filepath.Join(dir, "extra.yaml")) }, wantOut: []string{"configmap/extra pruned"}},
		{
			name: "rejected object: nothing applied, exit 1",
			before: func() {
				write("bad.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: broken}\nspec: {ports: [{port: 99999}]}\n")
			},
			wantCode: 1,
			wantErr:  []string{"1 object(s) rejected, nothing applied", "service/broken", "99999"},
		},
		{name: "missing --name is a usage error", before: func() { os.Remove(filepath.Join(dir, "bad.yaml")) }, extra: []string{"--name", ""}, wantCode: 2, wantErr: []string{"--name is required"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.before != nil {
				st.before()
			}
			code, out, errOut := run(t, st.extra...)
			if code != st.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, st.wantCode, out, errOut)
			}
			for _, w := range st.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range st.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}

	t.Run("json output for scripts", func(t *testing.T) {
		code, out, errOut := run(t, "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var res struct {
			Name    string
			Objects []struct{ Kind, Name, Action string }
			// writes counted on the wire: an unchanged set costs none
			Requests struct{ Writes, DryRuns int }
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if res.Name != "web" || len(res.Objects) != 2 || res.Requests.Writes != 0 || res.Requests.DryRuns != 0 {
			t.Errorf("json result = %+v, want 2 unchanged objects and no writes", res)
		}
	})

	t.Run("conflict exits 1 and leaves the other owner's value", func(t *testing.T) {
		patch := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-config","namespace":"web"},"data":{"region":"theirs"}}`
		if _, err := c.Kubectl(t.Context(), strings.NewReader(patch), "apply", "--server-side", "--force-conflicts", "--field-manager=other-tool", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(t)
		if code != 1 || !strings.Contains(out, `conflict: configmap/web-config in namespace "web": .data.region owned by field manager "other-tool"`) || !strings.Contains(errOut, "1 conflict(s)") {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		got, _ := c.Kubectl(t.Context(), nil, "-n", "web", "get", "configmap", "web-config", "-o", "jsonpath={.data.region}")
		if string(got) != "theirs" {
			t.Errorf("region = %q, want theirs", got)
		}
	})
}
