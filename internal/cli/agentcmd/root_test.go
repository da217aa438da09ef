package agentcmd

import (
	"bytes"
	"strings"
	"testing"
)

// TestAgentBinary: what a user of flotilla-agent sees: its verbs, usage errors with exit
// code 2 that name what is wrong, and a refused join token file.
func TestAgentBinary(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		code    int
		out     string // in stdout
		errText string // in stderr
	}{
		{args: []string{"--help"}, out: "flotilla-agent --hub URL --join-token T --state-dir D [flags]"},
		{args: []string{"--help"}, out: "export-reports"},
		{args: []string{"version"}, out: "flotilla "},
		{args: nil, code: 2, errText: "--state-dir is required"},
		{args: []string{"web"}, code: 2, errText: `flotilla-agent: takes no arguments, got "web"`},
		{args: []string{"import"}, code: 2, errText: "flotilla-agent import: needs a bundle file"},
		{args: []string{"--bogus"}, code: 2, errText: "flotilla-agent: unknown flag: --bogus (see flotilla-agent --help)"},
		{args: []string{"--state-dir", t.TempDir(), "--join-token-file", "/nonexistent"}, code: 2, errText: "--join-token-file: open /nonexistent"},
	} {
		var out, errOut bytes.Buffer
		code := Run(t.Context(), tt.args, &out, &errOut)
		if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.errText) {
			t.Errorf("flotilla-agent %v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, out.String(), errOut.String(), tt.code, tt.out, tt.errText)
		}
	}
}
