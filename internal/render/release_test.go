package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFile: a file is read only inside its artifact, whole, and bounded; each refusal
// says why.
func TestReadArtifactFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	for name, content := range map[string]string{"values/prod.yaml": "a: 1\n", "big.yaml": strings.Repeat("x", 11), "chart/Chart.yaml": "name: c\n"} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("password: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "values", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("prod.yaml", filepath.Join(root, "values", "inside.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want, wantErr string }{
		{path: "values/prod.yaml", want: "a: 1\n"},
		{path: "./values/../values/prod.yaml", want: "a: 1\n"},
		{path: "values/inside.yaml", want: "a: 1\n"},
		{path: "", wantErr: "not a path inside the source"},
		{path: "/etc/passwd", wantErr: "not a path inside the source"},
		{path: "../secret.yaml", wantErr: "not a path inside the source"},
		{path: "values/link.yaml", wantErr: "path escapes from parent"},
		{path: "values/none.yaml", wantErr: "no such file in the source"},
		{path: "values", wantErr: "not a regular file"},
		{path: "big.yaml", wantErr: "larger than the limit of 10 bytes"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			data, err := ReadArtifactFile(root, tc.path, 10)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %v, want %q", err, tc.wantErr)
				}
			case err != nil || string(data) != tc.want:
				t.Errorf("ReadFile = %q, %v; want %q", data, err, tc.want)
			}
		})
	}
	for dir, want := range map[string]bool{"chart": true, "./chart/": true, "values": false, "../chart": false, "/chart": false, "": false, ".": false} {
		if got := IsChart(root, dir); got != want {
			t.Errorf("IsChart(%q) = %t, want %t", dir, got, want)
		}
	}
}
