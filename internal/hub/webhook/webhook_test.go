package webhook

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestVerify(t *testing.T) {
	t.Parallel()
	// GitHub's documented example (docs.github.com, "Validating webhook deliveries").
	const ghSecret, ghBody = "It's a Secret to Everybody", "Hello, World!"
	const ghSig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	tests := []struct {
		name     string
		provider Provider
		header   http.Header
		body     string
		secret   string
		wantErr  string // "" : verified
	}{
		{"github documented example", GitHub, header(GitHubSignature, ghSig), ghBody, ghSecret, ""},
		{"github signature of another body", GitHub, header(GitHubSignature, ghSig), ghBody + " ", ghSecret,
			"github webhook: X-Hub-Signature-256 does not match the body signed with the configured secret"},
		{"github another secret", GitHub, header(GitHubSignature, ghSig), ghBody, "guessed",
			"github webhook: X-Hub-Signature-256 does not match the body signed with the configured secret"},
		{"github no header", GitHub, header(), ghBody, ghSecret, "github webhook: no X-Hub-Signature-256 header"},
		{"github sha1 header only", GitHub, header("X-Hub-Signature", "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59"), ghBody, ghSecret,
			"github webhook: no X-Hub-Signature-256 header"},
		{"github no algorithm prefix", GitHub, header(GitHubSignature, strings.TrimPrefix(ghSig, "sha256=")), ghBody, ghSecret,
			`github webhook: X-Hub-Signature-256 is not "sha256=HEX"`},
		{"github short hex", GitHub, header(GitHubSignature, ghSig[:40]), ghBody, ghSecret,
			`github webhook: X-Hub-Signature-256 is not "sha256=" and 64 hex digits`},
		{"github not hex", GitHub, header(GitHubSignature, "sha256="+strings.Repeat("zz", 32)), ghBody, ghSecret,
			`github webhook: X-Hub-Signature-256 is not "sha256=" and 64 hex digits`},
		{"github upper-case hex", GitHub, header(GitHubSignature, "sha256="+strings.ToUpper(ghSig[7:])), ghBody, ghSecret, ""},
		{"no secret configured verifies nothing", GitHub, header(GitHubSignature, SignatureHeader([]byte(ghBody), "")), ghBody, "",
			"github webhook: no secret configured"},
		{"gitlab token", GitLab, header(GitLabToken, "s3cr3t-token"), "{}", "s3cr3t-token", ""},
		{"gitlab wrong token", GitLab, header(GitLabToken, "s3cr3t-tokem"), "{}", "s3cr3t-token",
			"gitlab webhook: X-Gitlab-Token does not match the configured secret"},
		{"gitlab token prefix", GitLab, header(GitLabToken, "s3cr3t"), "{}", "s3cr3t-token",
			"gitlab webhook: X-Gitlab-Token does not match the configured secret"},
		{"gitlab no token", GitLab, header(), "{}", "s3cr3t-token", "gitlab webhook: no X-Gitlab-Token header"},
		{"generic signature", Generic, header(GenericSignature, SignatureHeader([]byte(`{"url":"x"}`), "generic-key")), `{"url":"x"}`, "generic-key", ""},
		{"generic github header is not read", Generic, header(GitHubSignature, SignatureHeader([]byte(`{"url":"x"}`), "generic-key")), `{"url":"x"}`, "generic-key",
			"generic webhook: no X-Flotilla-Signature header"},
		{"generic wrong signature", Generic, header(GenericSignature, SignatureHeader([]byte(`{"url":"y"}`), "generic-key")), `{"url":"x"}`, "generic-key",
			"generic webhook: X-Flotilla-Signature does not match the body signed with the configured secret"},
		{"unknown provider", Provider("bitbucket"), header(), "{}", "bitbucket-key", `webhook provider "bitbucket": unknown`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Verify(tt.provider, tt.header, []byte(tt.body), tt.secret)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify: %v, want verified", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Verify: verified, want %q", tt.wantErr)
			}
			if !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("Verify: %v does not wrap ErrUnauthenticated", err)
			}
			if want := tt.wantErr + ": " + ErrUnauthenticated.Error(); err.Error() != want {
				t.Errorf("Verify: %q, want %q", err, want)
			}
			if strings.Contains(err.Error(), tt.secret) && tt.secret != "" {
				t.Errorf("Verify: error %q shows the secret", err)
			}
		})
	}
}

func TestSignatureHeaderMatchesGitHubExample(t *testing.T) {
	t.Parallel()
	got := SignatureHeader([]byte("Hello, World!"), "It's a Secret to Everybody")
	if want := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"; got != want {
		t.Fatalf("SignatureHeader = %s, want %s", got, want)
	}
}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		provider Provider
		header   http.Header
		body     []byte
		want     Event
		wantErr  string
	}{
		{"github push", GitHub, header(GitHubEvent, "push"), testdata(t, "github-push.json"), Event{
			Kind: KindPush, Name: "push", Branch: "main",
			URLs: []string{"https://github.com/Codertocat/platform.git", "git@github.com:Codertocat/platform.git",
				"https://github.com/Codertocat/platform", "git://github.com/Codertocat/platform.git"},
		}, ""},
		{"github ping", GitHub, header(GitHubEvent, "ping"), testdata(t, "github-ping.json"), Event{Kind: KindPing, Name: "ping"}, ""},
		{"github other event", GitHub, header(GitHubEvent, "issues"), []byte(`{}`), Event{Kind: KindIgnored, Name: "issues"}, ""},
		{"github no event header", GitHub, header(), testdata(t, "github-push.json"), Event{}, "github webhook: no X-GitHub-Event header"},
		{"github push not JSON", GitHub, header(GitHubEvent, "push"), []byte(`payload=%7B%7D`), Event{},
			"github push event: invalid character 'p' looking for beginning of value"},
		{"github push without repository", GitHub, header(GitHubEvent, "push"), []byte(`{"ref":"refs/heads/main"}`), Event{},
			"github push event: no repository URL"},
		{"github push of a note ref", GitHub, header(GitHubEvent, "push"),
			[]byte(`{"ref":"refs/notes/commits","repository":{"clone_url":"https://github.com/o/r.git"}}`), Event{},
			`github push event: ref "refs/notes/commits" is neither refs/heads/BRANCH nor refs/tags/TAG`},
		{"github tag push", GitHub, header(GitHubEvent, "push"),
			[]byte(`{"ref":"refs/tags/v1.2.3","repository":{"clone_url":"https://github.com/o/r.git"}}`),
			Event{Kind: KindPush, Name: "push", Tag: "v1.2.3", URLs: []string{"https://github.com/o/r.git"}}, ""},
		{"gitlab push hook", GitLab, header(GitLabEvent, "Push Hook"), testdata(t, "gitlab-push.json"), Event{
			Kind: KindPush, Name: "Push Hook", Branch: "master",
			URLs: []string{"http://example.com/mike/diaspora.git", "git@example.com:mike/diaspora.git", "http://example.com/mike/diaspora"},
		}, ""},
		{"gitlab tag push hook", GitLab, header(GitLabEvent, "Tag Push Hook"), testdata(t, "gitlab-tag-push.json"), Event{
			Kind: KindPush, Name: "Tag Push Hook", Tag: "v1.0.0",
			URLs: []string{"http://example.com/jsmith/example.git", "git@example.com:jsmith/example.git", "http://example.com/jsmith/example"},
		}, ""},
		{"gitlab tag push hook of a branch", GitLab, header(GitLabEvent, "Tag Push Hook"), testdata(t, "gitlab-push.json"), Event{},
			`gitlab tag push hook: ref "refs/heads/master" is not a tag`},
		{"gitlab merge request", GitLab, header(GitLabEvent, "Merge Request Hook"), []byte(`{}`), Event{Kind: KindIgnored, Name: "Merge Request Hook"}, ""},
		{"gitlab no event header", GitLab, header(), testdata(t, "gitlab-push.json"), Event{}, "gitlab webhook: no X-Gitlab-Event header"},
		{"generic branch", Generic, header(), []byte(`{"url":"https://git.example.com/platform.git","branch":"main"}`),
			Event{Kind: KindPush, Name: "push", Branch: "main", URLs: []string{"https://git.example.com/platform.git"}}, ""},
		{"generic full branch ref", Generic, header(), []byte(`{"url":"https://git.example.com/platform.git","branch":"refs/heads/main"}`),
			Event{Kind: KindPush, Name: "push", Branch: "main", URLs: []string{"https://git.example.com/platform.git"}}, ""},
		{"generic tag", Generic, header(), []byte(`{"url":"https://git.example.com/platform.git","tag":"v2.0.0"}`),
			Event{Kind: KindPush, Name: "push", Tag: "v2.0.0", URLs: []string{"https://git.example.com/platform.git"}}, ""},
		{"generic no ref: every source of the repository", Generic, header(), []byte(`{"url":"https://git.example.com/platform.git"}`),
			Event{Kind: KindPush, Name: "push", URLs: []string{"https://git.example.com/platform.git"}}, ""},
		{"generic no url", Generic, header(), []byte(`{"branch":"main"}`), Event{}, "generic webhook: no url"},
		{"generic unknown field", Generic, header(), []byte(`{"url":"u","ref":"main"}`), Event{},
			`generic webhook: want {"url": ..., "branch": ...}: json: unknown field "ref"`},
		{"generic two documents", Generic, header(), []byte(`{"url":"u"} {"url":"v"}`), Event{}, "generic webhook: more than one JSON document"},
		{"generic branch and tag", Generic, header(), []byte(`{"url":"u","branch":"main","tag":"v1"}`), Event{},
			`generic webhook: branch "main" and tag "v1": name one`},
		{"generic control character", Generic, header(), []byte(`{"url":"u","branch":"ma\nin"}`), Event{},
			`generic webhook: ref name "ma\nin" has a control character`},
		{"generic overlong branch", Generic, header(), []byte(`{"url":"u","branch":"` + strings.Repeat("b", 256) + `"}`), Event{},
			"generic webhook: ref name of 256 bytes: at most 255"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.provider, tt.header, tt.body)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse: %+v, want error %q", got, tt.wantErr)
				}
				if !errors.Is(err, ErrPayload) {
					t.Errorf("Parse: %v does not wrap ErrPayload", err)
				}
				if want := tt.wantErr + ": " + ErrPayload.Error(); err.Error() != want {
					t.Errorf("Parse: %q, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}
