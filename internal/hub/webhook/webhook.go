// Package webhook checks and reads the push events Git providers send to the hub: GitHub
// (an HMAC-SHA256 signature of the body), GitLab (a shared token) and a generic provider
// (an HMAC-SHA256 signature, for scripts and other servers). It does no I/O: the caller
// reads the body (at most MaxBody bytes), checks it with Verify, reads it with Parse, and
// polls the sources whose repository (Key) and ref the event names.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// MaxBody bounds the body of an event: GitHub caps its payloads at 25 MB, but a push event
// with a few commits is a few KiB, and the hub reads nothing of the commits.
const MaxBody = 1 << 20

// Provider is who sends the event.
type Provider string

// The providers the hub serves, at /hooks/{provider}.
const (
	GitHub  Provider = "github"
	GitLab  Provider = "gitlab"
	Generic Provider = "generic"
)

// Providers are every provider, in the order the docs name them.
var Providers = []Provider{GitHub, GitLab, Generic}

// Headers the providers sign or authenticate with.
const (
	// GitHubSignature is "sha256=" and the hex HMAC-SHA256 of the body with the secret.
	GitHubSignature = "X-Hub-Signature-256"
	GitHubEvent     = "X-GitHub-Event"
	// GitLabToken is the secret token itself.
	GitLabToken = "X-Gitlab-Token"
	GitLabEvent = "X-Gitlab-Event"
	// GenericSignature is "sha256=" and the hex HMAC-SHA256 of the body with the secret.
	GenericSignature = "X-Flotilla-Signature"
)

// ErrUnauthenticated is what every failed check wraps: the caller answers 401.
var ErrUnauthenticated = errors.New("webhook not authenticated")

// Verify checks that the event was sent by someone who holds secret: the HMAC of the body
// (GitHub, generic) or the token (GitLab), compared in constant time. An empty secret
// verifies nothing.
func Verify(p Provider, h http.Header, body []byte, secret string) error {
	if secret == "" {
		return fmt.Errorf("%s webhook: no secret configured: %w", p, ErrUnauthenticated)
	}
	switch p {
	case GitHub:
		return verifyHMAC(p, GitHubSignature, h.Get(GitHubSignature), body, secret)
	case Generic:
		return verifyHMAC(p, GenericSignature, h.Get(GenericSignature), body, secret)
	case GitLab:
		got := h.Get(GitLabToken)
		if got == "" {
			return fmt.Errorf("gitlab webhook: no %s header: %w", GitLabToken, ErrUnauthenticated)
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(secret)) != 1 {
			return fmt.Errorf("gitlab webhook: %s does not match the configured secret: %w", GitLabToken, ErrUnauthenticated)
		}
		return nil
	}
	return fmt.Errorf("webhook provider %q: unknown: %w", p, ErrUnauthenticated)
}

func verifyHMAC(p Provider, header, value string, body []byte, secret string) error {
	if value == "" {
		return fmt.Errorf("%s webhook: no %s header: %w", p, header, ErrUnauthenticated)
	}
	hexSig, ok := strings.CutPrefix(value, "sha256=")
	if !ok {
		return fmt.Errorf("%s webhook: %s is not \"sha256=HEX\": %w", p, header, ErrUnauthenticated)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%s webhook: %s is not \"sha256=\" and 64 hex digits: %w", p, header, ErrUnauthenticated)
	}
	if !hmac.Equal(got, Sign(body, secret)) {
		return fmt.Errorf("%s webhook: %s does not match the body signed with the configured secret: %w", p, header, ErrUnauthenticated)
	}
	return nil
}

// Sign returns the HMAC-SHA256 of body with secret.
func Sign(body []byte, secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}

// SignatureHeader is the value of X-Hub-Signature-256 or X-Flotilla-Signature for body.
func SignatureHeader(body []byte, secret string) string {
	return "sha256=" + hex.EncodeToString(Sign(body, secret))
}
