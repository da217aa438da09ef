package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact/ocitest"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/registrytest"
)

// TestOCISourceVerified: an OCI artifact signed with cosign by a key the operator configured
// reaches the cluster's assignment, the audit trail records who signed it, and when the tag
// moves to an unsigned artifact the source shows the refusal while the signed revision stays
// assigned, until the new one is signed too.
func TestOCISourceVerified(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t, registrytest.Options{}) // plain HTTP: the source says insecure
	kp := ocitest.GenerateKeyPair(t)
	const repo = "platform/web"
	dir := filepath.Join(t.TempDir(), "manifests")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {v: '1'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	signed := ocitest.PushOras(t, reg, repo, "stable", dir, ocitest.Push{})
	ocitest.Sign(t, reg, kp, repo, signed)

	fleetDir := t.TempDir()
	fleet := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: web-oci}
spec:
  oci:
    url: oci://%s/%s
    tag: stable
    insecure: true
    verify: {cosign: {publicKeys: [release]}}
  interval: 2s
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: web-oci
  path: manifests
  namespace: web
  targets: [{selector: {matchLabels: {env: prod}}}]
`, reg.Host, repo)
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	th := startHub(t, fleetDir, func(o *Options) { o.VerifyKeys = map[string]string{"release": kp.Public} })
	if _, err := th.api.AddCluster(t.Context(), "edge", map[string]string{"env": "prod"}); err != nil {
		t.Fatal(err)
	}

	first := "stable@" + signed
	st := waitStatus(t, th, "the signed artifact assigned", func(st hubclient.StatusView) bool {
		return len(st.Assignments) == 1 && st.Assignments[0].DesiredRevision == first
	})
	firstDigest := st.Assignments[0].DesiredDigest

	records, err := th.api.Audit(t.Context(), hubclient.AuditFilter{Action: "source.revision"})
	if err != nil {
		t.Fatal(err)
	}
	var verified map[string]any
	for _, r := range records {
		if r.Detail["source"] == "web-oci" && r.Detail["revision"] == first {
			verified, _ = r.Detail["verified"].(map[string]any)
		}
	}
	if verified["key"] != "release" || verified["digest"] != signed || !strings.HasPrefix(fmt.Sprint(verified["fingerprint"]), "sha256:") {
		t.Fatalf("source.revision audit records %+v: want one for %s verified by key release", records, first)
	}

	// The tag moves to an artifact nobody signed.
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {v: 'evil'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unsigned := ocitest.PushOras(t, reg, repo, "stable", dir, ocitest.Push{})
	st = waitStatus(t, th, "the refusal shown", func(st hubclient.StatusView) bool {
		return len(st.Sources) == 1 && strings.Contains(st.Sources[0].Error, "no cosign signature found for "+unsigned)
	})
	if e := st.Sources[0].Error; !strings.Contains(e, "source 'web-oci'") || !strings.Contains(e, "keys 'release'") {
		t.Errorf("source error %q: want it to name the source and the key", e)
	}
	if a := st.Assignments[0]; a.DesiredRevision != first || a.DesiredDigest != firstDigest {
		t.Fatalf("after the refusal the assignment is at %s (%s), want %s (%s) still", a.DesiredRevision, a.DesiredDigest, first, firstDigest)
	}
	if st.Sources[0].Revision != first {
		t.Errorf("source revision %s after the refusal, want %s still", st.Sources[0].Revision, first)
	}

	// Signed, it goes through.
	ocitest.Sign(t, reg, kp, repo, unsigned)
	waitStatus(t, th, "the newly signed artifact assigned", func(st hubclient.StatusView) bool {
		return len(st.Assignments) == 1 && st.Assignments[0].DesiredRevision == "stable@"+unsigned && st.Sources[0].Error == ""
	})
}

// TestVerifyKeyRefusedAtStart: a key file that does not load fails the hub's start, naming it.
func TestVerifyKeyRefusedAtStart(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(bad, []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = New(t.Context(), Options{DataDir: filepath.Join(dir, "hub"), Fleet: t.TempDir(), VerifyKeys: map[string]string{"release": bad}, AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0"}, st)
	if err == nil || !strings.Contains(err.Error(), "key 'release'") || !strings.Contains(err.Error(), `"ENCRYPTED SIGSTORE PRIVATE KEY", want "PUBLIC KEY"`) {
		t.Fatalf("New with a private key as --verify-key: %v", err)
	}
}

// waitStatus polls the status until ok, for at most a minute.
func waitStatus(t *testing.T, th *testHub, what string, ok func(hubclient.StatusView) bool) hubclient.StatusView {
	t.Helper()
	var st hubclient.StatusView
	eventually.Within(t, time.Minute, func() error {
		var err error
		if st, err = th.api.Status(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !ok(st) {
			return fmt.Errorf("waiting for %s: status %+v", what, st)
		}
		return nil
	})
	return st
}
