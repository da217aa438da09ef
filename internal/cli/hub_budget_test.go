package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestHubRenderBudgetFlags: the --render-* flags are shown in --help with their defaults and
// an example; a value no render could run under is a usage error (exit 2) naming the flag
// and the value.
func TestHubRenderBudgetFlags(t *testing.T) {
	t.Parallel()
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), args, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	code, help := run("hub", "--help")
	for _, want := range []string{`--render-memory string`, `(default "256Mi")`, `--render-cpu duration`, `--render-timeout duration`,
		`--render-max-objects int`, `(default 10000)`, `--render-max-output string`, `(default "64Mi")`,
		`--render-memory 128Mi --render-timeout 10s`} {
		if code != 0 || !strings.Contains(help, want) {
			t.Errorf("hub --help (exit %d) does not show %q", code, want)
		}
	}
	base := []string{"hub", "--data-dir", filepath.Join(t.TempDir(), "hub"), "--fleet", t.TempDir(), "--agent-addr", "127.0.0.1:0", "--api-addr", "127.0.0.1:0"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--render-memory", "lots"}, `--render-memory "lots": want a positive quantity such as "256Mi"`},
		{[]string{"--render-memory", "1Mi"}, `--render-memory 1Mi: below the least a render can run in (16Mi)`},
		{[]string{"--render-max-output", "0"}, `--render-max-output "0": want a positive quantity such as "256Mi"`},
		{[]string{"--render-timeout", "0s"}, `--render-timeout 0s: want a positive duration such as "30s"`},
		{[]string{"--render-max-objects", "-1"}, `--render-max-objects -1: want a positive number`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out := run(append(base, tt.args...)...)
			if code != 2 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, tt.want)
			}
		})
	}
}
