package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestSyncCommand requests syncs with the CLI against a real hub: the answer names the
// request, an override is on the audit trail with its actor and reason, and refusals say why.
func TestSyncCommand(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 2, Releases: 1})
	run := func(t *testing.T, wantCode int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--hub", f.APIURL, "--token", f.AdminToken, "--ca", f.CAPath)
		if code := Run(t.Context(), args, &out, &errOut); code != wantCode {
			t.Fatalf("flotilla %s: exit %d, want %d: %s%s", strings.Join(args[:len(args)-6], " "), code, wantCode, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	release, cluster := f.Releases[0], f.Clusters[1]

	out := run(t, 0, "sync", release)
	if want := "requested for release " + release + " on every cluster by token:admin"; !strings.HasPrefix(out, "Sync sync-") || !strings.Contains(out, want) {
		t.Errorf("sync %s:\n%s\nwant %q", release, out, want)
	}
	var v hubclient.SyncView
	out = run(t, 0, "sync", release, "--cluster", cluster, "--override", "--reason", "INC-4711 hotfix", "-o", "json")
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Release != release || v.Cluster != cluster || !v.Override || v.Reason != "INC-4711 hotfix" || v.Actor != "token:admin" {
		t.Fatalf("sync --override -o json: %s (%v)", out, err)
	}
	audit := run(t, 0, "audit", "--action", "sync.override", "-o", "json")
	var recs []hubclient.AuditRecord
	if err := json.Unmarshal([]byte(audit), &recs); err != nil {
		t.Fatalf("audit -o json: %v: %s", err, audit)
	}
	if len(recs) != 1 || recs[0].Actor != "token:admin" || recs[0].Cluster != cluster || recs[0].Release != release ||
		recs[0].Detail["reason"] != "INC-4711 hotfix" || recs[0].Detail["id"] != v.ID {
		t.Errorf("sync.override audit records: %+v", recs)
	}
	if out := run(t, 0, "sync"); !strings.Contains(out, "requested for every release on every cluster") {
		t.Errorf("sync of every release:\n%s", out)
	}
	if out := run(t, 1, "sync", "nope"); !strings.Contains(out, `sync release nope on every cluster: release "nope" not found in the fleet configuration`) {
		t.Errorf("sync of an unknown release:\n%s", out)
	}
	if out := run(t, 1, "sync", release, "--cluster", "nope"); !strings.Contains(out, `cluster "nope" not found`) {
		t.Errorf("sync on an unknown cluster:\n%s", out)
	}
	if out := run(t, 2, "sync", release, "--override"); !strings.Contains(out, "--override needs --reason") {
		t.Errorf("sync --override without --reason:\n%s", out)
	}
	if out := run(t, 2, "sync", "a", "b"); !strings.Contains(out, "flotilla sync: takes at most one release name, got 2 arguments: a b") {
		t.Errorf("sync a b:\n%s", out)
	}
}

func TestSyncHelp(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := Run(t.Context(), []string{"sync", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("sync --help: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"flotilla sync web --cluster eu-west-1 --override --reason", "Examples:", "sync.override", "--cluster"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("sync --help does not contain %q:\n%s", want, out.String())
		}
	}
}

func TestReadWebhookSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gh := write("gh", "0123456789abcdef0123\n")
	gl := write("gl", "gitlab-token-0123456789")
	empty := write("empty", "\n")
	short := write("short", "hunter2\n")
	tests := []struct {
		name    string
		values  []string
		want    map[string]string
		wantErr string
		usage   bool
	}{
		{name: "none", values: nil, want: nil},
		{name: "two providers, trailing newline trimmed", values: []string{"github=" + gh, "gitlab=" + gl},
			want: map[string]string{"github": "0123456789abcdef0123", "gitlab": "gitlab-token-0123456789"}},
		{name: "not PROVIDER=FILE", values: []string{gh}, usage: true,
			wantErr: `--webhook-secret-file "` + gh + `": want PROVIDER=FILE, e.g. github=/etc/flotilla/github-webhook-secret`},
		{name: "unknown provider", values: []string{"bitbucket=" + gh}, usage: true,
			wantErr: `--webhook-secret-file "bitbucket=` + gh + `": provider "bitbucket": want github, gitlab or generic`},
		{name: "a provider twice", values: []string{"github=" + gh, "github=" + gl}, usage: true,
			wantErr: "--webhook-secret-file: provider github named twice"},
		{name: "missing file", values: []string{"generic=" + filepath.Join(dir, "nope")},
			wantErr: "--webhook-secret-file generic: open " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{name: "empty file", values: []string{"github=" + empty}, wantErr: "--webhook-secret-file github: " + empty + " is empty"},
		{name: "short secret", values: []string{"github=" + short},
			wantErr: "--webhook-secret-file github: the secret in " + short + " has 7 characters: use at least 16 (e.g. openssl rand -hex 32)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readWebhookSecrets(tt.values)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				var ue usageError
				if isUsage := errors.As(err, &ue); isUsage != tt.usage {
					t.Errorf("usage error (exit 2): %v, want %v", isUsage, tt.usage)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
		})
	}
}
