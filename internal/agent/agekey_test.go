package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/secrets"
)

func TestAgeKeyInStateDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k, err := loadOrCreateAgeKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ageKeyFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s mode = %v, want 0600", path, st.Mode().Perm())
	}
	if !strings.HasPrefix(k.Recipient, "age1") || !strings.HasPrefix(k.Identity, "AGE-SECRET-KEY-1") {
		t.Fatalf("key = %+v", k.Recipient)
	}
	// The next start reads the same key, and tightens a loosened mode.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := loadOrCreateAgeKey(dir)
	if err != nil || again != k {
		t.Fatalf("second start: key changed or %v", err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode after restart = %v, want 0600", st.Mode().Perm())
	}
	// No temporary file is left beside it.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".age-key-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	if err := os.WriteFile(path, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrCreateAgeKey(dir); err == nil || !strings.Contains(err.Error(), ageKeyFile) {
		t.Errorf("a corrupt key file: err = %v, want one naming it", err)
	}
}

func TestDecryptorForAssignment(t *testing.T) {
	t.Parallel()
	k, err := secrets.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{id: &identity{Cluster: "eu-1"}, age: k}
	if d, err := a.decryptor(&desired.Assignment{Release: "web"}); d != nil || err != nil {
		t.Errorf("no decryption asked: got %v, %v; want nil, nil", d, err)
	}
	if _, err := a.decryptor(&desired.Assignment{Release: "web", Decryption: "vault"}); err == nil || !strings.Contains(err.Error(), `release web: decryption provider "vault"`) {
		t.Errorf("unknown provider: err = %v", err)
	}
	d, err := a.decryptor(&desired.Assignment{Release: "web", Decryption: "sops"})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := secrets.NewKey()
	enc, err := secrets.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {pw: x}\n"), "yaml", []string{other.Recipient}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decrypt("db.yaml", enc, "yaml"); err == nil || !strings.Contains(err.Error(), "not encrypted for cluster eu-1") {
		t.Errorf("err = %v, want it to name cluster eu-1", err)
	}
}
