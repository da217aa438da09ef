package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/gittest"
)

// TestSourcePolicyRefusals: what the operator's policy refuses shows as each source's error in
// the API, with the setting that would allow it, and the allowed source still resolves.
func TestSourcePolicyRefusals(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	gittest.CommitFiles(t, filepath.Join(root, "apps"), map[string][]byte{"web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")})
	base := serveGitHTTP(t, root, "deploy", "s3cret")
	outside := t.TempDir()
	gittest.CommitFiles(t, outside, map[string][]byte{"x.yaml": []byte("a: b\n")})

	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "local.creds"), []byte("username: deploy\npassword: s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "github.creds"), []byte("token: ghp_x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(cfgDir, "credentials.yaml")
	if err := os.WriteFile(cfg, []byte("credentials:\n  local: {file: local.creds, hosts: [127.0.0.1]}\n  github-ro: {file: github.creds, hosts: [github.com]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	source := func(name, git string) string {
		return fmt.Sprintf("apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: %s}\nspec:\n  git: %s\n  interval: 1m\n---\n", name, git)
	}
	fleet := source("allowed", fmt.Sprintf("{url: %q, branch: main, insecure: true, credentials: local}", base+"/apps")) +
		source("other-host", fmt.Sprintf("{url: %q, branch: main, insecure: true, credentials: github-ro}", base+"/apps")) +
		source("plain-http", fmt.Sprintf("{url: %q, branch: main, credentials: local}", base+"/apps")) +
		source("any-file", fmt.Sprintf("{url: %q, branch: main}", "file://"+outside)) +
		source("hub-file", fmt.Sprintf("{url: %q, branch: main, credentialsFile: %s}", "https://github.com/o/r", filepath.Join(cfgDir, "github.creds")))
	fleetDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(strings.TrimSuffix(fleet, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	th := startHub(t, fleetDir, func(o *Options) {
		o.CredentialsConfig = cfg
		o.AllowFileSources = []string{root}
	})
	want := map[string]string{
		"allowed":    "",
		"other-host": "source 'other-host': credentials 'github-ro' may be sent to github.com only, not to 127.0.0.1:",
		"plain-http": "source 'plain-http': " + base + "/apps is plain HTTP: use https://, or set insecure: true on the source to accept it",
		"any-file":   "source 'any-file': file://" + outside + " is not under a directory the hub allows for file sources (" + root + "; --allow-file-sources)",
		"hub-file":   "source 'hub-file': credentialsFile " + filepath.Join(cfgDir, "github.creds") + " is not under a directory the hub allows (allowCredentialsFiles in --credentials-config)",
	}
	eventually.Within(t, 30*time.Second, func() error {
		sources, err := th.api.Sources(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var wrong []string
		for _, s := range sources {
			w, ok := want[s.Name]
			switch {
			case !ok:
				wrong = append(wrong, "unexpected source "+s.Name)
			case w == "" && (s.Error != "" || s.Revision == ""):
				wrong = append(wrong, fmt.Sprintf("%s: error %q, revision %q; want it resolved", s.Name, s.Error, s.Revision))
			case w != "" && !strings.HasPrefix(s.Error, w):
				wrong = append(wrong, fmt.Sprintf("%s: error %q\n  want %q", s.Name, s.Error, w))
			}
		}
		if len(sources) != len(want) || len(wrong) != 0 {
			return fmt.Errorf("%d sources, want %d:\n%s", len(sources), len(want), strings.Join(wrong, "\n"))
		}
		return nil
	})
}
