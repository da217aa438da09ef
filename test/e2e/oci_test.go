package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact/ocitest"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/registrytest"
)

// TestOCISourceSignedWithCosign: manifests pushed to a registry as `flux push artifact` does,
// signed with the real cosign by a key the hub's operator configured, reach a real cluster. A
// newer version nobody signed is skipped (the audit trail says so) until it is signed; then
// the cluster gets it, and the audit trail names the key for each revision.
func TestOCISourceSignedWithCosign(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t, registrytest.Options{}) // plain HTTP: the source says insecure
	kp := ocitest.GenerateKeyPair(t)
	const repo = "platform/web"
	push := func(version string) string {
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {version: %q}\n", version)
		return ocitest.PushFlux(t, reg, repo, "v"+version, map[string]string{"web/config.yaml": cm}, ocitest.Push{})
	}
	v1 := push("1.0.0")
	ocitest.Sign(t, reg, kp, repo, v1)
	v2 := push("1.1.0") // not signed yet

	repoDir := t.TempDir()
	newRepo(t, repoDir, map[string]string{"fleet/fleet.yaml": fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: web-oci}
spec:
  oci:
    url: oci://%s/%s
    semver: ">=1.0.0"
    insecure: true
    verify: {cosign: {publicKeys: [release]}}
  interval: 2s
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: web-oci
  path: web
  targets: [{selector: {}}]
  namespace: web
  createNamespace: true
  interval: 2s
`, reg.Host, repo)})
	f := newFleet(t, "file://"+repoDir, map[string]map[string]string{"edge": {"env": "prod"}},
		func(o *hub.Options) { o.VerifyKeys = map[string]string{"release": kp.Public} })

	applied := func(rev string) func(hubclient.StatusView) bool {
		return func(st hubclient.StatusView) bool {
			return len(st.Assignments) == 1 && st.Assignments[0].Phase == "Ready" && st.Assignments[0].AppliedRevision == rev
		}
	}
	f.waitStatus("the signed v1.0.0 applied", 2*time.Minute, applied("v1.0.0@"+v1))
	if v, ok := configMapData(t, f.clusters["edge"], "web", "web-config", "version"); !ok || v != "1.0.0" {
		t.Fatalf("web-config version %q (found %v), want 1.0.0", v, ok)
	}

	ocitest.Sign(t, reg, kp, repo, v2)
	f.waitStatus("v1.1.0 applied once signed", 2*time.Minute, applied("v1.1.0@"+v2))
	if v, _ := configMapData(t, f.clusters["edge"], "web", "web-config", "version"); v != "1.1.0" {
		t.Fatalf("web-config version %q, want 1.1.0", v)
	}

	records, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Action: "source.revision"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, r := range records {
		if r.Detail["source"] == "web-oci" {
			got[fmt.Sprint(r.Detail["revision"])], _ = r.Detail["verified"].(map[string]any)
		}
	}
	first, second := got["v1.0.0@"+v1], got["v1.1.0@"+v2]
	if first["key"] != "release" || !strings.HasPrefix(fmt.Sprint(first["skipped"]), "v1.1.0 (no cosign signature found for "+v2) {
		t.Errorf("audit of v1.0.0: verified %v; want key release and v1.1.0 skipped as unsigned", first)
	}
	if second["key"] != "release" || second["digest"] != v2 || second["skipped"] != nil {
		t.Errorf("audit of v1.1.0: verified %v; want key release, digest %s, nothing skipped", second, v2)
	}
}
