package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestHubAgentPing: --agent-ping-interval and --agent-ping-timeout are shown in --help with an
// example; PINGs that would keep a dead connection's cluster reachable past
// --unreachable-after are a usage error (exit 2) that names the three values.
func TestHubAgentPing(t *testing.T) {
	t.Parallel()
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), args, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	code, help := run("hub", "--help")
	if code != 0 || !strings.Contains(help, "--agent-ping-interval duration") || !strings.Contains(help, "--agent-ping-timeout duration") ||
		!strings.Contains(help, "--agent-ping-interval 20s --agent-ping-timeout 10s") {
		t.Errorf("hub --help (exit %d) does not show the agent PING flags and their example:\n%s", code, help)
	}
	dir := t.TempDir()
	base := []string{"hub", "--data-dir", filepath.Join(dir, "hub"), "--fleet", t.TempDir(), "--agent-addr", "127.0.0.1:0", "--api-addr", "127.0.0.1:0"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"an interval as long as unreachable-after", []string{"--agent-ping-interval", "2m"},
			"agent ping interval 2m0s plus agent ping timeout 15s must be shorter than unreachable-after 2m0s"},
		{"a default interval beyond a short unreachable-after's share", []string{"--unreachable-after", "40s", "--agent-ping-timeout", "30s"},
			"agent ping interval 15s plus agent ping timeout 30s must be shorter than unreachable-after 40s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := run(append(base, tt.args...)...)
			if code != 2 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, tt.want)
			}
		})
	}
}
