package secrets_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/flotilla/flotilla/internal/render"
	"github.com/flotilla/flotilla/internal/secrets"
	"github.com/flotilla/flotilla/internal/secrets/sopstest"
)

const secretDoc = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: app
  annotations: {owner: team-a}
type: Opaque
stringData:
  password: correct-horse-battery
  replicas: "3"
data:
  token: c2VjcmV0LXRva2Vu
`

// The agent decrypts what the real sops CLI encrypts for its recipient: a plain directory and
// a kustomization, through render as the agent renders.
func TestAgentDecryptsFilesTheSOPSCLIEncrypted(t *testing.T) {
	t.Parallel()
	cluster, other := mustKey(t), mustKey(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "db.yaml")
	if err := os.WriteFile(plain, []byte(secretDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	enc := sopstest.Run(t, nil, "--encrypt", "--age", other.Recipient+","+cluster.Recipient,
		"--encrypted-regex", "^(data|stringData)$", plain)
	if strings.Contains(string(enc), "correct-horse") {
		t.Fatalf("sops left the plaintext:\n%s", enc)
	}
	dec, err := secrets.NewDecryptor("cluster eu-1", cluster.Identity)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dec.Decrypt("secrets/db.yaml", enc, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	assertSecret(t, got)

	root := t.TempDir()
	write(t, filepath.Join(root, "plain", "db.yaml"), enc)
	write(t, filepath.Join(root, "kust", "db.yaml"), enc)
	write(t, filepath.Join(root, "kust", "kustomization.yaml"), []byte("namespace: other\nresources: [db.yaml]\n"))
	for _, path := range []string{"plain", "kust"} {
		objs, err := render.Render(context.Background(), render.Options{Root: root, Path: path, Decrypt: dec})
		if err != nil {
			t.Fatalf("render %s: %v", path, err)
		}
		if len(objs) != 1 {
			t.Fatalf("render %s: %d objects, want 1", path, len(objs))
		}
		sd, _ := objs[0].Object["stringData"].(map[string]any)
		if sd["password"] != "correct-horse-battery" {
			t.Errorf("render %s: stringData = %v", path, sd)
		}
	}

	// The whole file encrypted (no --encrypted-regex) decrypts too.
	enc = sopstest.Run(t, nil, "--encrypt", "--age", cluster.Recipient, plain)
	if got, err = dec.Decrypt("secrets/db.yaml", enc, "yaml"); err != nil {
		t.Fatal(err)
	}
	assertSecret(t, got)
}

// A multi-document file the sops CLI encrypted as a whole (one MAC over every document)
// decrypts as a whole; documents encrypted one by one and put in one file decrypt one by one.
func TestAgentDecryptsMultiDocumentFiles(t *testing.T) {
	t.Parallel()
	cluster := mustKey(t)
	dir := t.TempDir()
	two := filepath.Join(dir, "two.yaml")
	write(t, two, []byte(secretDoc+"---\n"+strings.Replace(secretDoc, "name: db", "name: db2", 1)))
	whole := sopstest.Run(t, nil, "--encrypt", "--age", cluster.Recipient, "--encrypted-regex", "^(data|stringData)$", two)
	one, err := secrets.Encrypt([]byte(secretDoc), "yaml", []string{cluster.Recipient}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write(t, filepath.Join(root, "whole", "s.yaml"), whole)
	other, err := secrets.Encrypt([]byte(strings.Replace(secretDoc, "name: db", "name: other", 1)), "yaml", []string{cluster.Recipient}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "joined", "s.yaml"), []byte(string(one)+"---\n"+string(other)))
	dec, err := secrets.NewDecryptor("cluster eu-1", cluster.Identity)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Render(context.Background(), render.Options{Root: root, Path: "whole", Decrypt: dec})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[1].GetName() != "db2" {
		t.Fatalf("whole file: %d objects, want db and db2", len(objs))
	}
	for _, o := range objs {
		if sd, _ := o.Object["stringData"].(map[string]any); sd["password"] != "correct-horse-battery" {
			t.Errorf("%s: stringData = %v", o.GetName(), sd)
		}
	}
	if _, err := render.Render(context.Background(), render.Options{Root: root, Path: "whole"}); err == nil ||
		!strings.Contains(err.Error(), "render whole/s.yaml: documents 1-2 (encrypted together) are SOPS-encrypted") {
		t.Errorf("without decryption: err = %v", err)
	}
	objs, err = render.Render(context.Background(), render.Options{Root: root, Path: "joined", Decrypt: dec})
	if err != nil || len(objs) != 2 || objs[1].GetName() != "other" {
		t.Fatalf("documents encrypted one by one: %d objects, %v; want db and other", len(objs), err)
	}
	// A document of them changed after encryption (its name is under the MAC) fails the
	// file, naming the document.
	write(t, filepath.Join(root, "joined", "s.yaml"), []byte(string(one)+"---\n"+strings.Replace(string(other), "name: other", "name: changed", 1)))
	if _, err := render.Render(context.Background(), render.Options{Root: root, Path: "joined", Decrypt: dec}); err == nil ||
		!strings.Contains(err.Error(), "render joined/s.yaml: document 2: MAC mismatch") {
		t.Errorf("joined file: err = %v, want document 2's MAC mismatch", err)
	}
}

// The real sops CLI decrypts what Encrypt writes, with the key of any recipient.
func TestSOPSCLIDecryptsWhatFlotillaEncrypts(t *testing.T) {
	t.Parallel()
	a, b := mustKey(t), mustKey(t)
	enc, err := secrets.Encrypt([]byte(secretDoc), "yaml", []string{a.Recipient, b.Recipient}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	encFile := filepath.Join(dir, "db.yaml")
	write(t, encFile, enc)
	for _, k := range []secrets.Key{a, b} {
		keyFile := filepath.Join(dir, "key.txt")
		write(t, keyFile, secrets.FormatIdentity(k))
		got := sopstest.Run(t, []string{"SOPS_AGE_KEY_FILE=" + keyFile}, "--decrypt", encFile)
		assertSecret(t, got)
	}
}

func assertSecret(t *testing.T, doc []byte) {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	sd, _ := m["stringData"].(map[string]any)
	d, _ := m["data"].(map[string]any)
	md, _ := m["metadata"].(map[string]any)
	if sd["password"] != "correct-horse-battery" || sd["replicas"] != "3" || d["token"] != "c2VjcmV0LXRva2Vu" || md["name"] != "db" {
		t.Errorf("decrypted Secret differs:\n%s", doc)
	}
	if _, ok := m["sops"]; ok {
		t.Errorf("decrypted Secret keeps its sops metadata:\n%s", doc)
	}
}

func mustKey(t *testing.T) secrets.Key {
	t.Helper()
	k, err := secrets.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
