package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/hubtest"
)

// TestTokenCommands creates, lists, uses, rotates and revokes a named token with the CLI
// against a real hub.
func TestTokenCommands(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 2, Releases: 1})
	run := func(t *testing.T, token string, wantCode int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--hub", f.APIURL, "--token", token, "--ca", f.CAPath)
		if code := Run(t.Context(), args, &out, &errOut); code != wantCode {
			t.Fatalf("flotilla %s: exit %d, want %d: %s%s", strings.Join(args[:len(args)-6], " "), code, wantCode, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	var created struct{ Name, Token string }
	out := run(t, f.AdminToken, 0, "token", "create", "ci", "--role", "deployer", "--project", "platform", "--expires", "90d", "-o", "json")
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Name != "ci" || !strings.HasPrefix(created.Token, "flt_") {
		t.Fatalf("token create -o json: %q (%v)", out, err)
	}
	if out := run(t, f.AdminToken, 0, "token", "list"); !strings.Contains(out, "ci") || !strings.Contains(out, "deployer") || !strings.Contains(out, "platform") || strings.Contains(out, created.Token) {
		t.Errorf("token list:\n%s", out)
	}
	// The new token reads the fleet (platform's releases on every cluster) and may not write.
	if out := run(t, created.Token, 0, "get", "clusters"); !strings.Contains(out, f.Clusters[0]) {
		t.Errorf("get clusters with the deployer token:\n%s", out)
	}
	if out := run(t, created.Token, 1, "token", "list"); !strings.Contains(out, "token:ci (deployer:platform) may not GET /api/v1/tokens: it needs admin") {
		t.Errorf("token list as a deployer:\n%s", out)
	}
	rotated := run(t, f.AdminToken, 0, "token", "rotate", "ci")
	if !strings.Contains(rotated, "Token ci rotated") {
		t.Errorf("token rotate:\n%s", rotated)
	}
	if out := run(t, created.Token, 1, "get", "clusters"); !strings.Contains(out, "bearer token") {
		t.Errorf("the rotated-out secret:\n%s", out)
	}
	if out := run(t, f.AdminToken, 0, "token", "revoke", "ci"); !strings.Contains(out, "token/ci revoked") {
		t.Errorf("token revoke:\n%s", out)
	}
	if out := run(t, f.AdminToken, 2, "token", "create", "x"); !strings.Contains(out, "--role is required") {
		t.Errorf("token create without --role:\n%s", out)
	}
	if out := run(t, f.AdminToken, 2, "token", "create", "x", "--role", "viewer", "--expires", "soon"); !strings.Contains(out, "--expires") {
		t.Errorf("token create --expires soon:\n%s", out)
	}
}
