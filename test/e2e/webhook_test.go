package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/cli"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/opsapi"
	"github.com/flotilla/flotilla/internal/hub/webhook"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// webhookFleet polls its source only every hour: a new commit lands early only if a webhook
// tells the hub.
const webhookFleet = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: "file://%s", branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: platform
  path: web
  targets: [{selector: {}}]
  namespace: web
  createNamespace: true
  prune: true
`

func hookConfigMap(version string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: " + version + "}\n"
}

// TestGitHubWebhookLandsACommit: a GitHub-format push with a correct signature makes the hub
// poll the source at once, and the new revision lands on a real cluster although the source
// is polled only every hour; a delivery with a wrong signature is refused with 401.
func TestGitHubWebhookLandsACommit(t *testing.T) {
	t.Parallel()
	const secret = "e2e-github-webhook-secret-0123456789"
	srcDir, fleetDir := t.TempDir(), t.TempDir()
	src := newRepo(t, srcDir, map[string]string{"web/web.yaml": hookConfigMap("v1")})
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": fmt.Sprintf(webhookFleet, srcDir)})
	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{"hook-1": {"env": "prod"}},
		func(o *hub.Options) { o.WebhookSecrets = map[string]string{"github": secret} })
	f.waitStatus("v1 applied", 90*time.Second, converged("", map[string][]string{"hook-1": {"web"}}))

	v2 := src.commit("web v2", map[string]string{"web/web.yaml": hookConfigMap("v2")})
	// What GitHub sends for a push to main (the fields the hub reads, and some it does not).
	body := fmt.Appendf(nil, `{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000", "after": %q,
  "repository": {"full_name": "platform/web", "clone_url": "file://%s.git", "ssh_url": "git@github.com:platform/web.git", "html_url": "https://github.com/platform/web"},
  "pusher": {"name": "Platform Engineer"}, "head_commit": {"id": %q, "message": "web v2"}}`, v2, srcDir, v2)
	pem, err := os.ReadFile(f.hub.CAPath())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deliver := func(signature string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.hub.APIURL()+"/hooks/github", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		req.Header.Set("X-Hub-Signature-256", signature)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}

	code, data := deliver(webhook.SignatureHeader(body, "not-the-configured-secret"))
	var apiErr hubclient.APIError
	_ = json.Unmarshal(data, &apiErr)
	if want := "github webhook: X-Hub-Signature-256 does not match the body signed with the configured secret: webhook not authenticated"; code != http.StatusUnauthorized || apiErr.Error != want {
		t.Fatalf("wrong signature: %d %s; want 401 %q", code, data, want)
	}
	if v, _ := configMapData(t, f.clusters["hook-1"], "web", "web", "version"); v != "v1" {
		t.Fatalf("web's version %q after the refused delivery, want v1", v)
	}

	code, data = deliver(webhook.SignatureHeader(body, secret))
	var resp opsapi.HookResponse
	if err := json.Unmarshal(data, &resp); err != nil || code != http.StatusAccepted || fmt.Sprint(resp.Polled) != "[platform]" {
		t.Fatalf("correct signature: %d %s (%v); want 202 polling platform", code, data, err)
	}
	f.waitStatus("v2 applied after the webhook, with an hour-long poll interval", 90*time.Second, converged(v2, map[string][]string{"hook-1": {"web"}}))
	if v, _ := configMapData(t, f.clusters["hook-1"], "web", "web", "version"); v != "v2" {
		t.Errorf("web's version %q after the webhook, want v2", v)
	}
}

// TestSyncNowReconcilesAtOnce: `flotilla sync` makes the agent reconcile now, through the
// watch it holds: a change by hand to an object of a release checked only every hour is
// healed at once, and the request is on the audit trail with its actor.
func TestSyncNowReconcilesAtOnce(t *testing.T) {
	t.Parallel()
	srcDir, fleetDir := t.TempDir(), t.TempDir()
	newRepo(t, srcDir, map[string]string{"web/web.yaml": hookConfigMap("v1")})
	hourly := strings.Replace(fmt.Sprintf(webhookFleet, srcDir), "  prune: true\n", "  prune: true\n  interval: 1h\n", 1)
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": hourly})
	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{"sn-1": {"env": "prod"}})
	f.waitStatus("v1 applied", 90*time.Second, converged("", map[string][]string{"sn-1": {"web"}}))
	c := f.clusters["sn-1"]
	if _, err := c.Kubectl(t.Context(), nil, "-n", "web", "patch", "configmap/web", "--type=merge", "-p", `{"data":{"version":"by-hand"}}`); err != nil {
		t.Fatal(err)
	}
	if v, _ := configMapData(t, c, "web", "web", "version"); v != "by-hand" {
		t.Fatalf("web's version %q after the change by hand", v)
	}

	var out, errOut bytes.Buffer
	args := []string{"sync", "web", "-o", "json", "--hub", f.hub.APIURL(), "--token", f.hub.AdminToken(), "--ca", f.hub.CAPath()}
	if code := cli.Run(t.Context(), args, &out, &errOut); code != 0 {
		t.Fatalf("flotilla sync web: exit %d: %s", code, errOut.String())
	}
	var sv hubclient.SyncView
	if err := json.Unmarshal(out.Bytes(), &sv); err != nil || sv.Release != "web" || sv.Override {
		t.Fatalf("sync web -o json: %s (%v)", out.String(), err)
	}
	eventually.Within(t, 60*time.Second, eventually.True("the change by hand healed by the sync, with an hour-long interval", func() bool {
		v, _ := configMapData(t, c, "web", "web", "version")
		return v == "v1"
	}))
	recs, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Action: "sync.requested"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Actor != "token:admin" || recs[0].Release != "web" || recs[0].Detail["id"] != sv.ID {
		t.Errorf("sync.requested audit records: %+v", recs)
	}
}
