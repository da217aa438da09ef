package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/oidctest"
)

// TestLoginWithTheDeviceFlow signs in with `flotilla login` against a real OpenID provider
// started here: the CLI prints a code, the user (this test, through the provider's storage)
// approves it, the CLI saves the ID token; the next verbs use it, and the audit trail names
// the OIDC subject and the role its group mapped to.
func TestLoginWithTheDeviceFlow(t *testing.T) {
	const clientID = "flotilla-cli"
	iss := oidctest.Start(t, clientID, map[string][]string{"id1": {"platform-admins", "staff"}, "id2": {"team-a"}})
	f := hubtest.Start(t, hubtest.Options{Clusters: 3, Releases: 1, Hub: hub.Options{OIDC: access.OIDCOptions{
		Issuer: iss.URL, ClientID: clientID, CAFile: iss.CAFile, GroupRoles: []string{"platform-admins=admin", "team-a=viewer:team-a"},
	}}})
	t.Setenv("FLOTILLA_CONFIG", filepath.Join(t.TempDir(), "config.yaml"))
	t.Setenv("FLOTILLA_HUB", "")
	t.Setenv("FLOTILLA_TOKEN", "")
	t.Setenv("FLOTILLA_CA", "")

	login := func(t *testing.T, user string) string {
		t.Helper()
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- Run(t.Context(), []string{"login", "--hub", f.APIURL, "--ca", f.CAPath, "--oidc-ca", iss.CAFile}, &out, &errOut)
		}()
		code := regexp.MustCompile(`enter the code ([A-Z0-9-]+)`)
		var userCode string
		eventually.Within(t, 30*time.Second, func() error {
			select {
			case c := <-done:
				t.Fatalf("login ended (exit %d) before printing a code: %s", c, errOut.String())
			default:
			}
			m := code.FindStringSubmatch(errOut.String())
			if m == nil {
				return fmt.Errorf("login printed no code yet: %q", errOut.String())
			}
			userCode = m[1]
			return nil
		})
		if err := iss.Approve(t.Context(), userCode, user); err != nil {
			t.Fatalf("approve %s: %v", userCode, err)
		}
		select {
		case c := <-done:
			if c != 0 {
				t.Fatalf("login: exit %d: %s", c, errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("login did not finish: %s", errOut.String())
		}
		return errOut.String()
	}
	run := func(t *testing.T, args ...string) (int, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := Run(t.Context(), args, &out, &errOut)
		return code, out.String() + errOut.String()
	}

	t.Run("an admin signs in and acts", func(t *testing.T) {
		said := login(t, "id1")
		if !strings.Contains(said, "as oidc:id1 (admin)") {
			t.Errorf("login said %q", said)
		}
		data, err := os.ReadFile(os.Getenv("FLOTILLA_CONFIG"))
		if err != nil || !strings.Contains(string(data), "token: ey") {
			t.Fatalf("config file: %s %v", data, err)
		}
		if code, out := run(t, "cluster", "add", "edge-9", "-l", "env=prod"); code != 0 {
			t.Fatalf("cluster add: %d %s", code, out)
		}
		c, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := c.Audit(t.Context(), hubclient.AuditFilter{Action: "cluster.added"})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Actor != "oidc:id1" || recs[0].Detail["role"] != "admin" {
			t.Errorf("cluster.added records: %+v, want one by oidc:id1 with role admin", recs)
		}
	})

	t.Run("a team's viewer sees only its project and may not write", func(t *testing.T) {
		said := login(t, "id2")
		if !strings.Contains(said, "as oidc:id2 (viewer in [team-a])") {
			t.Errorf("login said %q", said)
		}
		// The fleet's one release is the platform's: team-a sees no release and no cluster.
		if code, out := run(t, "get", "clusters", "-o", "json"); code != 0 || strings.TrimSpace(out) != "[]" {
			t.Errorf("get clusters: %d %s", code, out)
		}
		if code, out := run(t, "cluster", "add", "edge-10"); code == 0 || !strings.Contains(out, "oidc:id2 (viewer:team-a) may not POST /api/v1/clusters: it needs admin") {
			t.Errorf("cluster add as a viewer: %d %s", code, out)
		}
	})

	t.Run("a forged token is refused", func(t *testing.T) {
		if code, out := run(t, "login", "--hub", f.APIURL, "--ca", f.CAPath, "--token", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.x"); code == 0 || !strings.Contains(out, "refused") {
			t.Errorf("login with a forged ID token: %d %s", code, out)
		}
	})
}
