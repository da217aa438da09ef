package hub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/gittest"

	"github.com/go-git/go-git/v5"

	"github.com/flotilla/flotilla/internal/hub/opsapi"
	"github.com/flotilla/flotilla/internal/hub/webhook"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// githubPush is a GitHub push event (the fields GitHub sends that the hub reads, and a few
// it does not) for the repository at url.
func githubPush(url, ref string) []byte {
	return fmt.Appendf(nil, `{"ref": %q, "before": "6113728f27ae82c7b1a177c8d03f9e96e0adf246", "after": "0000000000000000000000000000000000000000",
  "repository": {"name": "apps", "full_name": "team/apps", "clone_url": %q, "ssh_url": "git@github.com:team/apps.git",
    "html_url": "https://github.com/team/apps", "default_branch": "main"},
  "pusher": {"name": "dev"}, "commits": [{"id": "0000000000000000000000000000000000000000", "message": "change"}]}`, ref, url)
}

// A GitHub push with a correct signature polls the source at once: the new commit reaches
// the agent although the source's interval is an hour. A push with a wrong signature is
// refused with 401 and polls nothing.
func TestGitHubWebhookPollsAtOnce(t *testing.T) {
	t.Parallel()
	const secret = "gh-webhook-secret-0123456789"
	repo, other, fleetDir := t.TempDir(), t.TempDir(), t.TempDir()
	gittest.CommitFiles(t, repo, map[string][]byte{"apps/web/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: one}\n")})
	gittest.CommitFiles(t, other, map[string][]byte{"apps/db/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\ndata: {version: one}\n")})
	fleet := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: file://%s, branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: other}
spec:
  git: {url: file://%s, branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: apps
  path: apps/web
  targets: [{selector: {matchLabels: {env: test}}}]
  namespace: web
`, repo, other)
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	th := startHub(t, fleetDir, func(o *Options) { o.WebhookSecrets = map[string]string{"github": secret} })
	a := th.addAgent(t, "edge", map[string]string{"env": "test"})
	w := openWatch(t, a)
	first := waitRevision(t, w, "the first poll", func(string) bool { return true })

	commitMore(t, repo, map[string][]byte{"apps/web/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: two}\n")})
	head := headCommit(t, repo)
	deliver := func(body []byte, signature string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, th.APIURL()+"/hooks/github", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		req.Header.Set("X-Hub-Signature-256", signature)
		resp, err := th.httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}

	// The URL as GitHub would send it for this repository: with ".git", another case.
	body := githubPush("FILE://"+repo+".git", "refs/heads/main")
	code, data := deliver(body, webhook.SignatureHeader(body, "a-guessed-secret-0123456789"))
	var apiErr hubclient.APIError
	_ = json.Unmarshal(data, &apiErr)
	if want := "github webhook: X-Hub-Signature-256 does not match the body signed with the configured secret: webhook not authenticated"; code != http.StatusUnauthorized || apiErr.Error != want {
		t.Fatalf("wrong signature: %d %s, want 401 %q", code, data, want)
	}
	// A correct push for the other repository: once its poll is done, a poll of apps that the
	// refused delivery had asked for would have been made in the same round, or earlier.
	otherBody := githubPush("file://"+other, "refs/heads/main")
	if code, data := deliver(otherBody, webhook.SignatureHeader(otherBody, secret)); code != http.StatusAccepted || !strings.Contains(string(data), `"polled":["other"]`) {
		t.Fatalf("push of the other repository: %d %s", code, data)
	}
	eventually.Within(t, time.Minute, func() error {
		if n := pollCount(th.Hub, "other"); n != "2" {
			return fmt.Errorf("the other source was polled %s times, want 2 (the first poll and the webhook's)", n)
		}
		return nil
	})
	if n := pollCount(th.Hub, "apps"); n != "1" {
		t.Fatalf("apps was polled %s times after the refused delivery, want 1 (the first poll)", n)
	}

	code, data = deliver(body, webhook.SignatureHeader(body, secret))
	var resp opsapi.HookResponse
	if err := json.Unmarshal(data, &resp); err != nil || code != http.StatusAccepted || fmt.Sprint(resp.Polled) != "[apps]" || resp.Ref != "refs/heads/main" {
		t.Fatalf("correct signature: %d %s (%v), want 202 polling apps", code, data, err)
	}
	got := waitRevision(t, w, "the webhook's poll", func(rev string) bool { return rev != first })
	if !strings.HasSuffix(got, head) {
		t.Errorf("revision after the webhook %s, want the new commit %s", got, head)
	}
}

// waitRevision returns the revision of release web in the first desired state the watch
// receives where ok accepts it.
func waitRevision(t *testing.T, w *watch, what string, ok func(string) bool) string {
	t.Helper()
	for {
		ds := w.next(t, what)
		for _, as := range ds.GetAssignments() {
			if as.GetRelease() == "web" && as.GetDigest() != "" && ok(as.GetRevision()) {
				return as.GetRevision()
			}
		}
	}
}

func headCommit(t *testing.T, dir string) string {
	t.Helper()
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	return h.Hash().String()
}
