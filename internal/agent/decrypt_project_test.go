package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/project"
	"github.com/flotilla/flotilla/internal/secrets"
)

// TestDecryptorPerProject: a release decrypts only with its own project's key. The
// platform's ciphertext (encrypted for the cluster key, as before keys per project) still
// decrypts for platform releases, a team's own ciphertext for its releases, and the
// platform's copied into a team release fails naming the team's key. The team's key is made
// at its first assignment, kept in the state dir, and read back at the next start.
func TestDecryptorPerProject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cluster, err := loadOrCreateAgeKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := loadProjectKeys(dir, cluster)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{id: &identity{Cluster: "eu-1"}, age: cluster, projectKeys: pk}
	ds := desired.State{Document: desired.Document{Assignments: []desired.Assignment{{Release: "web", Project: &project.Rules{Name: "team-a"}}}}}
	if created, err := pk.ensure(ds); err != nil || !created {
		t.Fatalf("ensure: created %v, %v", created, err)
	}
	rs := pk.recipients()
	if len(rs) != 1 || rs[0].GetProject() != "team-a" || rs[0].GetRecipient() == cluster.Recipient {
		t.Fatalf("recipients = %v, want team-a's own", rs)
	}
	teamKey := rs[0].GetRecipient()
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: pw}\n"
	enc := func(recipient string) []byte {
		b, err := secrets.Encrypt([]byte(secret), "yaml", []string{recipient}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	platformEnc, teamEnc := enc(cluster.Recipient), enc(teamKey)
	platform := &desired.Assignment{Release: "db", Decryption: "sops"}
	team := &desired.Assignment{Release: "team-a-web", Decryption: "sops", Project: &project.Rules{Name: "team-a"}}
	cases := []struct {
		name    string
		as      *desired.Assignment
		doc     []byte
		wantErr string
	}{
		{"platform ciphertext, platform release", platform, platformEnc, ""},
		{"team ciphertext, team release", team, teamEnc, ""},
		{"platform ciphertext copied into a team release", team, platformEnc, "not encrypted for project team-a's key on cluster eu-1"},
		{"team ciphertext in a platform release", platform, teamEnc, "not encrypted for cluster eu-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := a.decryptor(tc.as)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := d.Decrypt("secret.yaml", tc.doc, "yaml")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("decrypt: %v", err)
			case tc.wantErr == "" && !strings.Contains(string(plain), "password: pw"):
				t.Fatalf("plaintext = %q", plain)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("decrypt error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	// The next start reads the same team key.
	again, err := loadProjectKeys(dir, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if rs := again.recipients(); len(rs) != 1 || rs[0].GetRecipient() != teamKey {
		t.Fatalf("after restart recipients = %v, want team-a's %s", rs, teamKey)
	}
	if _, _, err := again.get("../etc"); err == nil || !strings.Contains(err.Error(), `project name "../etc": not a DNS label`) {
		t.Errorf("get(../etc) = %v", err)
	}
}
