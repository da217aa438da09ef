package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The offline verbs' refusals of how they are called: exit 2 with what is missing; and a
// state dir that never joined is an error that says so.
func TestOfflineCommandsRefuse(t *testing.T) {
	t.Setenv("FLOTILLA_CONFIG", "/nonexistent")
	bundleFile := filepath.Join(t.TempDir(), "b.bundle")
	if err := os.WriteFile(bundleFile, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bundle", "export"}, 2, "--cluster is required"},
		{[]string{"bundle", "export", "--cluster", "edge-1"}, 2, "no hub address"},
		{[]string{"bundle"}, 2, "needs a subcommand: export"},
		{[]string{"agent", "import"}, 2, "needs a bundle file"},
		{[]string{"agent", "import", bundleFile}, 2, "--state-dir is required"},
		{[]string{"agent", "import", filepath.Join(empty, "missing.bundle"), "--state-dir", empty}, 2, "no such file"},
		{[]string{"agent", "import", bundleFile, "--state-dir", empty}, 1, "holds no agent identity: join the agent to its hub first"},
		{[]string{"agent", "export-reports"}, 2, "--state-dir is required"},
		{[]string{"agent", "export-reports", "--state-dir", empty, "-o", "-"}, 1, "holds no agent identity"},
		{[]string{"hub", "import-reports"}, 2, "needs a reports file"},
		{[]string{"hub", "import-reports", filepath.Join(empty, "missing.tar")}, 2, "no such file"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(t.Context(), tt.args, &out, &errOut)
			if code != tt.code || !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut.String(), tt.code, tt.want)
			}
		})
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("the commands left %d files in a state dir that never joined", len(entries))
	}
}
