package benchcmd

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchFleetHelm: --helm is documented with an example, and combining it with the push
// baseline or the webhook mode is a usage error that says why.
func TestBenchFleetHelm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "help shows the mode and an example", args: []string{"fleet", "--help"},
			wantOut: "flotilla-bench fleet --helm --clusters 100"},
		{name: "with --push", args: []string{"fleet", "--helm", "--push"},
			wantCode: 2, wantErr: "--helm has no push baseline or webhook mode: leave out --push and --webhook"},
		{name: "with --webhook", args: []string{"fleet", "--helm", "--webhook"},
			wantCode: 2, wantErr: "--helm has no push baseline or webhook mode: leave out --push and --webhook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			if code := Run(t.Context(), tt.args, &out, &errOut); code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr: %s)", code, tt.wantCode, errOut.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout does not contain %q:\n%s", tt.wantOut, out.String())
			}
			if !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.wantErr, errOut.String())
			}
		})
	}
}
