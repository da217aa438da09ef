package render_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/render"
	"github.com/flotilla/flotilla/internal/secrets"
)

const dbSecret = `apiVersion: v1
kind: Secret
metadata:
  name: db
  labels: {app: db}
stringData:
  password: s3cret-plaintext
  url: postgres://${cluster_name}.db:5432
`

func sopsKey(t testing.TB) secrets.Key {
	t.Helper()
	k, err := secrets.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func encryptFor(t testing.TB, doc string, keys ...secrets.Key) string {
	t.Helper()
	var rs []string
	for _, k := range keys {
		rs = append(rs, k.Recipient)
	}
	format := "yaml"
	if strings.HasPrefix(doc, "{") {
		format = "json"
	}
	enc, err := secrets.Encrypt([]byte(doc), format, rs, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return string(enc)
}

func decryptorFor(t testing.TB, cluster string, k secrets.Key) render.Decryptor {
	t.Helper()
	d, err := secrets.NewDecryptor("cluster "+cluster, k.Identity)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func stringData(t *testing.T, objs []*unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	sd, _ := find(t, objs, "Secret", name)["stringData"].(map[string]any)
	return sd
}

func TestRenderDecryptsSOPSDocuments(t *testing.T) {
	t.Parallel()
	eu, us := sopsKey(t), sopsKey(t)
	vars := map[string]string{"cluster_name": "eu-1"}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {who: \"${cluster_name}\"}\n"

	t.Run("plain directory: decrypted, then substituted as any other document", func(t *testing.T) {
		root := writeTree(t, map[string]string{
			"app/cm.yaml":     cm + "---\n" + encryptFor(t, dbSecret, eu, us),
			"app/token.json":  encryptFor(t, `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"token": "json-plaintext"}}`, eu),
			"app/zz-cm2.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after}\n",
		})
		objs, err := render.Render(context.Background(), render.Options{Root: root, Path: "app", Vars: vars, Decrypt: decryptorFor(t, "eu-1", eu)})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(ids(objs), " "), "ConfigMap/app Secret/db Secret/token ConfigMap/after"; got != want {
			t.Fatalf("objects = %s, want %s", got, want)
		}
		sd := stringData(t, objs, "db")
		if sd["password"] != "s3cret-plaintext" || sd["url"] != "postgres://eu-1.db:5432" {
			t.Errorf("stringData = %v, want the plaintext with ${cluster_name} substituted", sd)
		}
		if _, ok := find(t, objs, "Secret", "db")["sops"]; ok {
			t.Error("the applied Secret keeps the sops metadata")
		}
		if stringData(t, objs, "token")["token"] != "json-plaintext" {
			t.Errorf("JSON Secret not decrypted: %v", find(t, objs, "Secret", "token"))
		}
	})

	t.Run("kustomization: files decrypted before kustomize transforms them", func(t *testing.T) {
		root := writeTree(t, map[string]string{
			"app/kustomization.yaml": "namespace: prod\ncommonLabels: {team: a}\nresources: [db.yaml, cm.yaml]\n",
			"app/cm.yaml":            cm,
			"app/db.yaml":            encryptFor(t, dbSecret, eu),
			// another cluster's Secret beside it, which this kustomization never reads
			"app/us-only.yaml": encryptFor(t, strings.Replace(dbSecret, "name: db", "name: us", 1), us),
		})
		objs, err := render.Render(context.Background(), render.Options{Root: root, Path: "app", Vars: vars, Decrypt: decryptorFor(t, "eu-1", eu)})
		if err != nil {
			t.Fatal(err)
		}
		db := find(t, objs, "Secret", "db")
		md := db["metadata"].(map[string]any)
		if md["namespace"] != "prod" || md["labels"].(map[string]any)["team"] != "a" {
			t.Errorf("kustomize's transformers did not run on the decrypted Secret: %v", md)
		}
		if sd := stringData(t, objs, "db"); sd["password"] != "s3cret-plaintext" || sd["url"] != "postgres://eu-1.db:5432" {
			t.Errorf("stringData = %v", sd)
		}
	})

	t.Run("kept as ciphertext for flotilla render", func(t *testing.T) {
		root := writeTree(t, map[string]string{"app/db.yaml": encryptFor(t, dbSecret, eu)})
		objs, err := render.Render(context.Background(), render.Options{Root: root, Path: "app", Vars: vars, KeepEncrypted: true})
		if err != nil {
			t.Fatal(err)
		}
		db := find(t, objs, "Secret", "db")
		if _, ok := db["sops"]; !ok {
			t.Errorf("want the sops metadata kept: %v", db)
		}
		if sd := stringData(t, objs, "db"); !strings.HasPrefix(sd["password"].(string), "ENC[AES256_GCM,") {
			t.Errorf("password = %v, want ciphertext", sd["password"])
		}
	})
}

func TestRenderRefusesSOPSDocuments(t *testing.T) {
	t.Parallel()
	eu, us := sopsKey(t), sopsKey(t)
	enc := encryptFor(t, dbSecret, us)
	for _, tc := range []struct {
		name    string
		files   map[string]string
		decrypt render.Decryptor
		want    string
		is      error
	}{
		{
			name:  "plain directory without decryption",
			files: map[string]string{"app/secrets/db.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n" + enc},
			want:  "render app/secrets/db.yaml: document 2 is SOPS-encrypted: set spec.decryption.provider: sops on the release",
			is:    render.ErrEncrypted,
		},
		{
			name:  "kustomization without decryption",
			files: map[string]string{"app/kustomization.yaml": "resources: [db.yaml]\n", "app/db.yaml": enc},
			want:  "render app/db.yaml: document 1 is SOPS-encrypted: set spec.decryption.provider: sops on the release",
			is:    render.ErrEncrypted,
		},
		{
			name:    "not encrypted for this cluster",
			files:   map[string]string{"app/secrets/db.yaml": enc},
			decrypt: decryptorFor(t, "eu-1", eu),
			want:    "render app/secrets/db.yaml: document 1: not encrypted for cluster eu-1 (recipients: " + us.Recipient + ")",
			is:      secrets.ErrNotForThisKey,
		},
		{
			name:    "kustomization: not encrypted for this cluster",
			files:   map[string]string{"app/kustomization.yaml": "resources: [db.yaml]\n", "app/db.yaml": enc},
			decrypt: decryptorFor(t, "eu-1", eu),
			want:    "render app/db.yaml: document 1: not encrypted for cluster eu-1",
			is:      secrets.ErrNotForThisKey,
		},
		{
			name:    "changed after encryption",
			files:   map[string]string{"app/db.yaml": strings.Replace(encryptFor(t, dbSecret, eu), "name: db", "name: other", 1)},
			decrypt: decryptorFor(t, "eu-1", eu),
			want:    "render app/db.yaml: document 1: MAC mismatch",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := writeTree(t, tc.files)
			objs, err := render.Render(context.Background(), render.Options{Root: root, Path: "app", Decrypt: tc.decrypt})
			if err == nil {
				t.Fatalf("rendered %v, want an error", ids(objs))
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to start with %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.is)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error holds plaintext: %v", err)
			}
		})
	}
}
