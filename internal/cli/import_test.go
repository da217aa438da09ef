package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

const importTestdata = "../importer/testdata/"

// TestImportCommand runs `flotilla import` as a user does: exit codes, where the fleet and
// the report go, and that the written fleet loads as the hub loads it.
func TestImportCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		out      bool // writes into -o DIR (appended by the test)
		wantCode int
		wantOut  []string
		wantErr  []string
	}{
		{name: "argocd with something left out exits 3", args: []string{"import", "argocd", importTestdata + "argocd", "--repo", "https://github.com/example/addons-repo.git=" + importTestdata + "argocd-repo"}, out: true,
			wantCode: 3, wantErr: []string{"left-out", "spec.source.directory.jsonnet", "imported 8 sources, 13 releases, 2 projects and 1 windows into"}},
		{name: "argocd converting everything exits 0 and prints to stdout", args: []string{"import", "argocd", importTestdata + "argocd-clean/app.yaml"},
			wantOut: []string{"kind: Release", "argocd.argoproj.io/cluster: prod-eu", "kind: Source"}, wantErr: []string{"0 left out"}},
		{name: "flux exits 3 for its HelmRelease", args: []string{"import", "flux", importTestdata + "flux", "--cluster", "production"}, out: true,
			wantCode: 3, wantErr: []string{"HelmRelease/flux-system/redis", "fluxcd.io/cluster=production"}},
		{name: "a missing input is a failure", args: []string{"import", "argocd", importTestdata + "nope"}, wantCode: 1, wantErr: []string{"no such file"}},
		{name: "import needs a tool", args: []string{"import"}, wantCode: 2, wantErr: []string{"flotilla import needs a subcommand: argocd, flux"}},
		{name: "argocd needs an input", args: []string{"import", "argocd"}, wantCode: 2, wantErr: []string{"flotilla import argocd: needs one file or directory"}},
		{name: "a bad --repo is a usage error", args: []string{"import", "argocd", importTestdata + "argocd", "--repo", "nodir"}, wantCode: 2, wantErr: []string{`--repo "nodir": want URL=DIR`}},
		{name: "a --repo that is no directory", args: []string{"import", "argocd", importTestdata + "argocd", "--repo", "u=/nonexistent"}, wantCode: 2, wantErr: []string{"/nonexistent is not a directory"}},
		{name: "a bad --report is a usage error", args: []string{"import", "flux", importTestdata + "flux", "--report", "yaml"}, wantCode: 2, wantErr: []string{`want text or json, got "yaml"`}},
		{name: "--adopt gives every release the old tool's managers", args: []string{"import", "flux", importTestdata + "flux", "--adopt"},
			wantCode: 3, wantOut: []string{"adopt:\n    fromManagers:\n    - kustomize-controller\n  interval: 10m0s\n  path: clusters/production"}},
		{name: "argocd --adopt", args: []string{"import", "argocd", importTestdata + "argocd-clean", "--adopt"},
			wantOut: []string{"adopt:\n    fromManagers:\n    - argocd-controller\n"}},
		{name: "help has examples", args: []string{"import", "argocd", "--help"}, wantOut: []string{"flotilla import argocd ./argocd-apps -o ./fleet", "--repo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := tt.args
			dir := filepath.Join(t.TempDir(), "fleet")
			if tt.out {
				args = append(args, "-o", dir)
			}
			var out, errOut bytes.Buffer
			code := Run(t.Context(), args, &out, &errOut)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr: %s)", code, tt.wantCode, errOut.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout does not contain %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, errOut.String())
				}
			}
			if strings.Contains(errOut.String(), "Error:") && code == 3 {
				t.Errorf("exit 3 printed an error line: %s", errOut.String())
			}
			if tt.out {
				if out.Len() != 0 {
					t.Errorf("with -o, stdout should be empty: %s", out.String())
				}
				if _, err := v1alpha1.LoadDir(dir); err != nil {
					t.Errorf("the hub refuses the written fleet: %v", err)
				}
			}
			if len(tt.wantOut) > 0 && strings.Contains(out.String(), "kind: Release") {
				fleetDir := t.TempDir()
				if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				if _, err := v1alpha1.LoadDir(fleetDir); err != nil {
					t.Errorf("the hub refuses the printed fleet: %v", err)
				}
			}
		})
	}
}

// TestImportReportJSON: --report json puts nothing but a JSON array on stderr.
func TestImportReportJSON(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := Run(t.Context(), []string{"import", "flux", importTestdata + "flux", "--report", "json", "-o", t.TempDir()}, &out, &errOut)
	if code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	var findings []struct {
		Level, File, Object, Field, Message, Do string
	}
	if err := json.Unmarshal(errOut.Bytes(), &findings); err != nil {
		t.Fatalf("stderr is not a JSON array: %v\n%s", err, errOut.String())
	}
	found := false
	for _, f := range findings {
		if f.Level == "left-out" && f.Object == "Kustomization/flux-system/podinfo" && f.Field == "spec.postBuild.substituteFrom[0]" && f.File != "" && f.Do != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("no left-out finding for substituteFrom in %s", errOut.String())
	}
}

// TestImportKeepsHandWrittenFiles: -o into a fleet directory never overwrites a file the
// importer did not write.
func TestImportKeepsHandWrittenFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mine := filepath.Join(dir, "sources.yaml")
	if err := os.WriteFile(mine, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run(t.Context(), []string{"import", "argocd", importTestdata + "argocd-clean", "-o", dir}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "was not written by flotilla import") {
		t.Errorf("exit %d, stderr %s", code, errOut.String())
	}
	if data, _ := os.ReadFile(mine); string(data) != "# mine\n" {
		t.Errorf("sources.yaml was changed: %q", data)
	}
}
