package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/cli"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/secrets"
	"github.com/flotilla/flotilla/internal/secrets/sopstest"
)

const secretsFleet = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: "file://%s", branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: db}
spec:
  source: apps
  path: secrets
  targets: [{selector: {}}]
  namespace: vault
  createNamespace: true
  selfHeal: true
  interval: 1s
  decryption: {provider: sops}
`

func settingsConfigMap(version string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {version: " + version + "}\n"
}

// TestSecretsEncryptedPerCluster: two clusters join and each makes its own age key; the hub
// shows their recipients. `flotilla secret encrypt --selector env=prod` encrypts a Secret for
// the production cluster (and the hub's recovery key) only. The release, with decryption
// sops, delivers it to that cluster, where it decodes to the plaintext; on the other cluster
// the revision fails naming the file and the cluster, and nothing of it is applied. A change
// by hand to the Secret is healed and shows in the drift view as a path, never a value.
// Afterwards no file of the hub (database, audit log, artifacts) and no agent state dir
// (reports outbox) holds the plaintext, and the real sops CLI decrypts the committed file
// with the recovery key.
func TestSecretsEncryptedPerCluster(t *testing.T) {
	t.Parallel()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	plaintext := "pw-" + hex.EncodeToString(b)
	tampered := "tampered-" + hex.EncodeToString(b)
	recovery, err := secrets.NewKey()
	if err != nil {
		t.Fatal(err)
	}

	repoDir := t.TempDir()
	rp := newRepo(t, repoDir, map[string]string{
		"fleet/fleet.yaml":      fmt.Sprintf(secretsFleet, repoDir),
		"secrets/settings.yaml": settingsConfigMap("v1"),
	})
	f := newFleet(t, "file://"+repoDir, map[string]map[string]string{"sa-1": {"env": "prod"}, "sb-1": {"env": "dev"}},
		func(o *hub.Options) { o.RecoveryRecipients = []string{recovery.Recipient} })
	f.waitStatus("v1 applied", 2*time.Minute, converged("", map[string][]string{"sa-1": {"db"}, "sb-1": {"db"}}))

	conn := []string{"--hub", f.hub.APIURL(), "--token", f.hub.AdminToken(), "--ca", f.hub.CAPath()}
	flotilla := func(args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := cli.Run(t.Context(), args, &out, &errOut); code != 0 {
			t.Fatalf("flotilla %s: exit %d: %s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}

	// Each agent made its key when it joined: the hub shows the recipients, the keys stay in
	// the state dirs.
	out, _ := flotilla(append([]string{"get", "clusters", "-o", "json"}, conn...)...)
	var clusters []hubclient.ClusterView
	if err := json.Unmarshal([]byte(out), &clusters); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	recipients := map[string]string{}
	for _, c := range clusters {
		recipients[c.Name] = c.AgeRecipient
		key, err := os.ReadFile(filepath.Join(f.dir, "agents", c.Name, "age.key"))
		if err != nil {
			t.Fatal(err)
		}
		k, err := secrets.ParseIdentity(key)
		if err != nil || k.Recipient != c.AgeRecipient {
			t.Errorf("cluster %s: the hub shows %q, the agent's state dir holds the key of %q (%v)", c.Name, c.AgeRecipient, k.Recipient, err)
		}
	}
	if !strings.HasPrefix(recipients["sa-1"], "age1") || !strings.HasPrefix(recipients["sb-1"], "age1") || recipients["sa-1"] == recipients["sb-1"] {
		t.Fatalf("recipients = %v, want one age key per cluster", recipients)
	}
	show, _ := flotilla(append([]string{"cluster", "show", "sa-1"}, conn...)...)
	if !strings.Contains(show, recipients["sa-1"]) {
		t.Errorf("cluster show does not print the age recipient:\n%s", show)
	}

	// Encrypt for the production cluster only.
	work := t.TempDir()
	plainFile, encFile := filepath.Join(work, "db.yaml"), filepath.Join(work, "db.enc.yaml")
	if err := os.WriteFile(plainFile, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\ntype: Opaque\nstringData:\n  password: "+plaintext+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, said := flotilla(append([]string{"secret", "encrypt", "--selector", "env=prod", "-o", encFile, plainFile}, conn...)...)
	if !strings.Contains(said, "for cluster sa-1") || !strings.Contains(said, "1 recovery recipient") {
		t.Errorf("secret encrypt says %q, want it to name cluster sa-1 and the recovery recipient", said)
	}
	enc, err := os.ReadFile(encFile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := secrets.Recipients(enc, "yaml")
	if err != nil || strings.Join(got, ",") != recipients["sa-1"]+","+recovery.Recipient {
		t.Fatalf("encrypted for %v (%v), want exactly sa-1's key and the recovery key", got, err)
	}
	commit := rp.commit("db password", map[string]string{"secrets/db.yaml": string(enc), "secrets/settings.yaml": settingsConfigMap("v2")})

	// sa-1 gets the Secret; sb-1's revision fails naming the file and the cluster.
	st := f.waitStatus("sa-1 applied, sb-1 failed", 2*time.Minute, func(st hubclient.StatusView) bool {
		ok := 0
		for _, a := range st.Assignments {
			if a.Cluster == "sa-1" && a.Phase == "Ready" && a.AppliedRevision == a.DesiredRevision && containsCommit(a.DesiredRevision, commit) {
				ok++
			}
			if a.Cluster == "sb-1" && containsCommit(a.DesiredRevision, commit) && strings.Contains(a.Error, "secrets/db.yaml") {
				ok++
			}
		}
		return ok == 2
	})
	for _, a := range st.Assignments {
		if a.Cluster == "sb-1" {
			for _, want := range []string{"render secrets/db.yaml: document 1: not encrypted for cluster sb-1", recipients["sa-1"]} {
				if !strings.Contains(a.Error, want) {
					t.Errorf("sb-1's error %q does not contain %q", a.Error, want)
				}
			}
		}
	}
	sa := kubernetes.NewForConfigOrDie(f.clusters["sa-1"].RESTConfig()).CoreV1()
	sec, err := sa.Secrets("vault").Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["password"]) != plaintext {
		t.Errorf("sa-1's Secret holds %q, want the plaintext", sec.Data["password"])
	}
	if _, ok := sec.Annotations["sops"]; ok || sec.Data["sops"] != nil {
		t.Errorf("the applied Secret carries SOPS metadata: %v", sec)
	}
	// Nothing of the failed revision reached sb-1: no Secret, the ConfigMap of v1.
	sb := kubernetes.NewForConfigOrDie(f.clusters["sb-1"].RESTConfig()).CoreV1()
	if _, err := sb.Secrets("vault").Get(t.Context(), "db", metav1.GetOptions{}); err == nil {
		t.Error("sb-1 has the Secret")
	}
	if v, _ := configMapData(t, f.clusters["sb-1"], "vault", "settings", "version"); v != "v1" {
		t.Errorf("sb-1's ConfigMap is at %q, want v1: a failed render applies nothing", v)
	}
	if v, _ := configMapData(t, f.clusters["sa-1"], "vault", "settings", "version"); v != "v2" {
		t.Errorf("sa-1's ConfigMap is at %q, want v2", v)
	}

	// A change by hand is healed, and the drift view names the field, never a value.
	if out, err := f.clusters["sa-1"].Kubectl(t.Context(), nil, "-n", "vault", "patch", "secret/db", "--type=merge",
		`-p={"data":{"password":"`+base64.StdEncoding.EncodeToString([]byte(tampered))+`"}}`); err != nil {
		t.Fatalf("kubectl patch: %v\n%s", err, out)
	}
	eventually.Within(t, time.Minute, eventually.True("drift on secret/db in the drift view", func() bool {
		v, err := f.client.Drift(t.Context(), hubclient.DriftFilter{Cluster: "sa-1", Release: "db"})
		if err != nil {
			return false
		}
		for _, o := range v.Objects {
			for _, fd := range o.Fields {
				if o.Object == "secret/db" && fd.Path == ".data.password" {
					if fd.Desired != "(redacted)" || fd.Live != "(redacted)" {
						t.Errorf("drift on secret/db carries values: desired %q live %q", fd.Desired, fd.Live)
					}
					return true
				}
			}
		}
		return false
	}))
	eventually.Within(t, time.Minute, eventually.True("the Secret healed", func() bool {
		s, err := sa.Secrets("vault").Get(t.Context(), "db", metav1.GetOptions{})
		return err == nil && string(s.Data["password"]) == plaintext
	}))

	// flotilla render prints ciphertext, unless --decrypt with a key.
	keyFile := filepath.Join(work, "recovery.txt")
	if err := os.WriteFile(keyFile, secrets.FormatIdentity(recovery), 0o600); err != nil {
		t.Fatal(err)
	}
	rendered, _ := flotilla("render", repoDir, "--path", "secrets")
	if strings.Contains(rendered, plaintext) || !strings.Contains(rendered, "ENC[AES256_GCM") {
		t.Errorf("flotilla render without --decrypt:\n%s", rendered)
	}
	rendered, _ = flotilla("render", repoDir, "--path", "secrets", "--decrypt", "--key-file", keyFile)
	if !strings.Contains(rendered, plaintext) {
		t.Errorf("flotilla render --decrypt does not show the plaintext:\n%s", rendered)
	}
	// The real sops decrypts the committed file with the recovery key.
	if dec := sopstest.Run(t, []string{"SOPS_AGE_KEY_FILE=" + keyFile}, "--decrypt", filepath.Join(repoDir, "secrets", "db.yaml")); !bytes.Contains(dec, []byte(plaintext)) {
		t.Errorf("sops --decrypt:\n%s", dec)
	}

	// The hub and the agents' state dirs never held the plaintext (nor the value set by
	// hand), in any form the API shows a Secret's data in.
	f.stopAgent("sa-1")
	f.stopAgent("sb-1")
	f.hubStop()
	f.hubStop = func() {}
	forbidden := map[string][]byte{}
	for _, v := range []string{plaintext, tampered} {
		forbidden[v] = []byte(v)
		forbidden["base64 of "+v] = []byte(base64.StdEncoding.EncodeToString([]byte(v)))
	}
	files := 0
	for _, dir := range []string{f.hubOpts.DataDir, filepath.Join(f.dir, "agents")} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files++
			for what, b := range forbidden {
				if bytes.Contains(data, b) {
					t.Errorf("%s holds the %s", p, what)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 4 {
		t.Fatalf("read %d files: the hub's and agents' state were not where the test looked", files)
	}
}
