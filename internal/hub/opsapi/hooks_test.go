package opsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/webhook"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// pollCall is one call of Deps.PollNow.
type pollCall struct{ url, ref string }

// hookServer serves the webhooks with the given secrets; PollNow records its calls and
// answers "apps" for the repository github.com/codertocat/platform.
type hookServer struct {
	mux   *http.ServeMux
	log   *bytes.Buffer
	mu    sync.Mutex
	calls []pollCall
	wakes int
}

func newHookServer(t *testing.T, secrets map[string]string, clk clock.Clock) *hookServer {
	t.Helper()
	hs := &hookServer{mux: http.NewServeMux(), log: &bytes.Buffer{}}
	api := New(Deps{
		Clock: clk,
		Wake: func() {
			hs.mu.Lock()
			defer hs.mu.Unlock()
			hs.wakes++
		},
		Logger: slog.New(slog.NewTextHandler(hs.log, nil)),
		PollNow: func(url, ref string) []string {
			hs.mu.Lock()
			defer hs.mu.Unlock()
			hs.calls = append(hs.calls, pollCall{url, ref})
			if webhook.Key(url) == "github.com/codertocat/platform" {
				return []string{"apps"}
			}
			return nil
		},
	}, Options{WebhookSecrets: secrets})
	for pattern, h := range api.Public() {
		hs.mux.Handle(pattern, h)
	}
	return hs
}

func (hs *hookServer) post(path string, header http.Header, body []byte, remote string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, path, bytes.NewReader(body))
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v) // canonicalizes X-GitHub-Event as a server receives it
		}
	}
	if remote != "" {
		req.RemoteAddr = remote
	}
	rec := httptest.NewRecorder()
	hs.mux.ServeHTTP(rec, req)
	return rec
}

func (hs *hookServer) polled() []pollCall {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return slices.Clone(hs.calls)
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "webhook", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHooks(t *testing.T) {
	t.Parallel()
	const ghSecret, glSecret, genSecret = "gh-secret-0123456789", "gl-token-0123456789", "generic-secret-0123456789"
	push := readTestdata(t, "github-push.json")
	glPush := readTestdata(t, "gitlab-push.json")
	generic := []byte(`{"url": "https://github.com/Codertocat/platform", "branch": "main"}`)
	gh := func(event string, body []byte, secret string) http.Header {
		return http.Header{webhook.GitHubEvent: {event}, webhook.GitHubSignature: {webhook.SignatureHeader(body, secret)}}
	}
	ghURLs := []string{"https://github.com/Codertocat/platform.git", "git@github.com:Codertocat/platform.git",
		"https://github.com/Codertocat/platform", "git://github.com/Codertocat/platform.git"}
	callsOf := func(ref string, urls ...string) []pollCall {
		var out []pollCall
		for _, u := range urls {
			out = append(out, pollCall{u, ref})
		}
		return out
	}
	tests := []struct {
		name       string
		secrets    map[string]string
		path       string
		header     http.Header
		body       []byte
		wantStatus int
		wantError  string // the error document's message
		wantPolled []string
		wantCalls  []pollCall
	}{
		{name: "github push with a correct signature polls the matching sources", path: "/hooks/github",
			header: gh("push", push, ghSecret), body: push, wantStatus: http.StatusAccepted,
			wantPolled: []string{"apps"}, wantCalls: callsOf("refs/heads/main", ghURLs...)},
		{name: "github push signed with another secret", path: "/hooks/github",
			header: gh("push", push, "not-the-secret"), body: push, wantStatus: http.StatusUnauthorized,
			wantError: "github webhook: X-Hub-Signature-256 does not match the body signed with the configured secret: webhook not authenticated"},
		{name: "github push without a signature", path: "/hooks/github",
			header: http.Header{webhook.GitHubEvent: {"push"}}, body: push, wantStatus: http.StatusUnauthorized,
			wantError: "github webhook: no X-Hub-Signature-256 header: webhook not authenticated"},
		{name: "github push whose body changed after signing", path: "/hooks/github",
			header: gh("push", push, ghSecret), body: bytes.Replace(push, []byte("refs/heads/main"), []byte("refs/heads/prod"), 1),
			wantStatus: http.StatusUnauthorized,
			wantError:  "github webhook: X-Hub-Signature-256 does not match the body signed with the configured secret: webhook not authenticated"},
		{name: "github ping", path: "/hooks/github", header: gh("ping", []byte(`{"zen":"x"}`), ghSecret), body: []byte(`{"zen":"x"}`),
			wantStatus: http.StatusOK, wantPolled: []string{}},
		{name: "github issue event is not acted on", path: "/hooks/github", header: gh("issues", []byte(`{}`), ghSecret), body: []byte(`{}`),
			wantStatus: http.StatusOK, wantPolled: []string{}},
		{name: "github push that is not JSON", path: "/hooks/github", header: gh("push", []byte("payload=x"), ghSecret), body: []byte("payload=x"),
			wantStatus: http.StatusBadRequest, wantError: "github push event: invalid character 'p' looking for beginning of value: webhook payload refused"},
		{name: "github body over 1 MiB", path: "/hooks/github",
			header: gh("push", []byte("x"), ghSecret), body: bytes.Repeat([]byte(" "), webhook.MaxBody+1),
			wantStatus: http.StatusRequestEntityTooLarge, wantError: fmt.Sprintf("github webhook: body over %d bytes", webhook.MaxBody)},
		{name: "gitlab push hook with the token", path: "/hooks/gitlab",
			header: http.Header{webhook.GitLabEvent: {"Push Hook"}, webhook.GitLabToken: {glSecret}}, body: glPush,
			wantStatus: http.StatusAccepted, wantPolled: []string{},
			wantCalls: callsOf("refs/heads/master", "http://example.com/mike/diaspora.git", "git@example.com:mike/diaspora.git", "http://example.com/mike/diaspora")},
		{name: "gitlab push hook with the github secret", path: "/hooks/gitlab",
			header: http.Header{webhook.GitLabEvent: {"Push Hook"}, webhook.GitLabToken: {ghSecret}}, body: glPush,
			wantStatus: http.StatusUnauthorized, wantError: "gitlab webhook: X-Gitlab-Token does not match the configured secret: webhook not authenticated"},
		{name: "generic push", path: "/hooks/generic",
			header: http.Header{webhook.GenericSignature: {webhook.SignatureHeader(generic, genSecret)}}, body: generic,
			wantStatus: http.StatusAccepted, wantPolled: []string{"apps"},
			wantCalls: callsOf("refs/heads/main", "https://github.com/Codertocat/platform")},
		{name: "generic push with an unknown field", path: "/hooks/generic",
			header: http.Header{webhook.GenericSignature: {webhook.SignatureHeader([]byte(`{"url":"u","x":1}`), genSecret)}}, body: []byte(`{"url":"u","x":1}`),
			wantStatus: http.StatusBadRequest, wantError: `generic webhook: want {"url": ..., "branch": ...}: json: unknown field "x": webhook payload refused`},
		{name: "a provider without a secret is not served", secrets: map[string]string{"github": ghSecret}, path: "/hooks/gitlab",
			header: http.Header{webhook.GitLabEvent: {"Push Hook"}, webhook.GitLabToken: {""}}, body: glPush,
			wantStatus: http.StatusNotFound, wantError: "no gitlab webhook: the hub has no secret for it (flotilla hub --webhook-secret-file gitlab=FILE)"},
		{name: "an unknown provider", path: "/hooks/bitbucket", body: []byte(`{}`), wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secrets := tt.secrets
			if secrets == nil {
				secrets = map[string]string{"github": ghSecret, "gitlab": glSecret, "generic": genSecret}
			}
			hs := newHookServer(t, secrets, clock.NewFake(time.Unix(0, 0)))
			rec := hs.post(tt.path, tt.header, tt.body, "")
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantError != "" {
				var e hubclient.APIError
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error != tt.wantError {
					t.Errorf("error %q (%v), want %q", rec.Body, err, tt.wantError)
				}
			}
			if tt.wantPolled != nil {
				var resp HookResponse
				if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(resp.Polled, tt.wantPolled) {
					t.Errorf("polled %v, want %v", resp.Polled, tt.wantPolled)
				}
			}
			if got := hs.polled(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("PollNow calls %v, want %v", got, tt.wantCalls)
			}
			hs.mu.Lock()
			wakes := hs.wakes
			hs.mu.Unlock()
			if want := len(tt.wantPolled) > 0; (wakes > 0) != want {
				t.Errorf("the controllers were woken %d times; want a wake-up: %v (sources polled)", wakes, want)
			}
			if tt.wantStatus == http.StatusUnauthorized {
				logged := hs.log.String()
				if !strings.Contains(logged, "webhook refused") || !strings.Contains(logged, "remote=192.0.2.1") {
					t.Errorf("the refusal was not logged with the remote address: %q", logged)
				}
				if strings.Contains(logged, "Codertocat") || strings.Contains(logged, "diaspora") {
					t.Errorf("the refused body was logged: %q", logged)
				}
			}
		})
	}
}

// A remote address past its burst is answered 429 with Retry-After before its body is read
// or its signature checked; another address is not affected, and the first is served again
// once its bucket refilled.
func TestHooksAreRateLimitedPerAddress(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	hs := newHookServer(t, map[string]string{"github": "gh-secret-0123456789"}, clk)
	body := []byte(`{}`)
	hdr := http.Header{webhook.GitHubEvent: {"ping"}, webhook.GitHubSignature: {webhook.SignatureHeader(body, "wrong-secret")}}
	for i := range hookBurst {
		if rec := hs.post("/hooks/github", hdr, body, "198.51.100.7:40000"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("delivery %d: status %d, want 401 within the burst", i+1, rec.Code)
		}
	}
	rec := hs.post("/hooks/github", hdr, body, "198.51.100.7:40001")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("delivery past the burst: status %d, Retry-After %q; want 429 and 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	if want := "github webhook: too many deliveries from 198.51.100.7: at most 5 a second"; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("429 body %s, want %q", rec.Body, want)
	}
	if rec := hs.post("/hooks/github", hdr, body, "203.0.113.9:5000"); rec.Code != http.StatusUnauthorized {
		t.Errorf("another address: status %d, want 401 (not limited)", rec.Code)
	}
	clk.Advance(time.Second)
	if rec := hs.post("/hooks/github", hdr, body, "198.51.100.7:40002"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a second later: status %d, want 401 (served again)", rec.Code)
	}
}
