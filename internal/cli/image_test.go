package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImageCommandRefusals checks each way flotilla image build and push can be called wrong:
// usage mistakes exit 2 before any work, bad inputs exit 1 naming the input.
func TestImageCommandRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "flotilla")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
		wantOut  string
	}{
		{name: "build help has examples", args: []string{"image", "build", "--help"}, wantOut: "flotilla image build --dest out/image"},
		{name: "push help has examples", args: []string{"image", "push", "--help"}, wantOut: "flotilla image push out/image ghcr.io/flotilla/flotilla:v0.1.0"},
		{name: "build needs --dest", args: []string{"image", "build"}, wantCode: 2, wantErr: "flotilla image build: --dest is required"},
		{name: "build with a bad tag", args: []string{"image", "build", "--dest", dir + "/x", "--tag", "Not A Name"}, wantCode: 2, wantErr: `--tag "Not A Name": want REPOSITORY:TAG`},
		{name: "build with a tag without its tag part", args: []string{"image", "build", "--dest", dir + "/x", "--tag", "registry.example.com/flotilla"}, wantCode: 2, wantErr: "want REPOSITORY:TAG"},
		{name: "build with an unknown format", args: []string{"image", "build", "--dest", dir + "/x", "--format", "docker"}, wantCode: 2, wantErr: `want oci-layout or tarball, got "docker"`},
		{name: "build of a script", args: []string{"image", "build", "--dest", dir + "/x", "--binary", script}, wantCode: 1, wantErr: "binary " + script + ": not a Linux executable"},
		// The test binary has no VCS stamp (and with -race is dynamically linked): refused either way.
		{name: "build of this unstamped binary", args: []string{"image", "build", "--dest", dir + "/x"}, wantCode: 1, wantErr: "Error: binary "},
		{name: "push needs two arguments", args: []string{"image", "push", dir}, wantCode: 2, wantErr: "flotilla image push: takes an image directory or tarball and a registry reference, got 1 arguments"},
		{name: "push to a bad reference", args: []string{"image", "push", dir, "UPPER/case:v1"}, wantCode: 2, wantErr: `reference "UPPER/case:v1"`},
		{name: "push of nothing", args: []string{"image", "push", filepath.Join(dir, "none"), "registry.example.com/flotilla:v1"}, wantCode: 1, wantErr: "no such file"},
		{name: "push of a directory that is no layout", args: []string{"image", "push", dir, "registry.example.com/flotilla:v1"}, wantCode: 1, wantErr: "image layout " + dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(t.Context(), tc.args, &out, &errOut)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d (stderr: %s)", code, tc.wantCode, errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr %q does not contain %q", errOut.String(), tc.wantErr)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("stdout %q does not contain %q", out.String(), tc.wantOut)
			}
			if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
				t.Errorf("a refused build wrote %s", filepath.Join(dir, "x"))
			}
		})
	}
}
