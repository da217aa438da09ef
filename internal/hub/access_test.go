package hub

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/oidctest"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// TestShortAdminTokenIsRefused: an empty admin.token used to switch authentication off (the
// hub compared the empty bearer of any request with the empty token). A hub now refuses to
// start on an empty or short one, and says how to get a new one.
func TestShortAdminTokenIsRefused(t *testing.T) {
	t.Parallel()
	for _, content := range []string{"", "\n", "guessable\n"} {
		dir := t.TempDir()
		st, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "hub.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		data := filepath.Join(dir, "hub")
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, AdminTokenFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		h, err := New(t.Context(), Options{DataDir: data, Fleet: t.TempDir(), AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0"}, st)
		if err == nil {
			h.agentLn.Close()
			h.apiLn.Close()
			h.audit.Close()
			t.Errorf("admin.token %q: the hub started", content)
			continue
		}
		if !strings.Contains(err.Error(), "refusing to start") || !strings.Contains(err.Error(), "delete the file") {
			t.Errorf("admin.token %q: %v", content, err)
		}
	}
}

// TestNamedTokenOnARealHub: a token created through the API works at once over TLS with its
// role, and stops working when revoked.
func TestNamedTokenOnARealHub(t *testing.T) {
	t.Parallel()
	th := startHub(t, "", nil)
	tok, err := th.api.CreateUserToken(t.Context(), hubclient.CreateUserTokenRequest{Name: "auditor", Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hubclient.NewClient(hubclient.Config{Hub: th.APIURL(), Token: tok.Token, CAFile: th.CAPath()})
	if err != nil {
		t.Fatal(err)
	}
	who, err := c.WhoAmI(t.Context())
	if err != nil || who.Actor != "token:auditor" || len(who.Grants) != 1 || who.Grants[0].Role != "viewer" {
		t.Fatalf("whoami: %+v %v", who, err)
	}
	var se *hubclient.StatusError
	if _, err := c.AddCluster(t.Context(), "edge-1", nil); !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Errorf("a viewer adding a cluster: %v, want 403", err)
	}
	if err := th.api.RevokeUserToken(t.Context(), "auditor"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WhoAmI(t.Context()); !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Errorf("a revoked token: %v, want 401", err)
	}
}

// TestDashboardDeviceSignIn: the dashboard signs in through the hub, which runs the device
// flow at a real OpenID provider for it (the page cannot call the issuer across origins).
func TestDashboardDeviceSignIn(t *testing.T) {
	t.Parallel()
	iss := oidctest.Start(t, "flotilla", map[string][]string{"id1": {"sre"}, "id2": {"nobody"}})
	th := startHub(t, "", func(o *Options) {
		o.OIDC = access.OIDCOptions{Issuer: iss.URL, ClientID: "flotilla", CAFile: iss.CAFile, GroupRoles: []string{"sre=viewer"}}
	})
	hc := th.httpClient()
	post := func(path, body string, out any) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, th.APIURL()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil {
			_ = json.NewDecoder(resp.Body).Decode(out)
		}
		return resp.StatusCode
	}
	signIn := func(user string) (int, map[string]string) {
		t.Helper()
		var start access.DeviceStart
		if code := post("/api/v1/login/device", "", &start); code != http.StatusOK || start.UserCode == "" || start.DeviceCode == "" || start.VerificationURI == "" {
			t.Fatalf("start: %d %+v", code, start)
		}
		poll := `{"deviceCode":"` + start.DeviceCode + `"}`
		if code := post("/api/v1/login/device/token", poll, nil); code != http.StatusAccepted {
			t.Fatalf("poll before the sign-in: %d, want 202", code)
		}
		if err := iss.Approve(t.Context(), start.UserCode, user); err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		code := post("/api/v1/login/device/token", poll, &got) // before got is read: a return's operands have no order
		return code, got
	}

	code, got := signIn("id1")
	if code != http.StatusOK || got["actor"] != "oidc:id1" || got["role"] != "viewer" || got["token"] == "" {
		t.Fatalf("poll after the sign-in: %d %v", code, got)
	}
	c, err := hubclient.NewClient(hubclient.Config{Hub: th.APIURL(), Token: got["token"], CAFile: th.CAPath()})
	if err != nil {
		t.Fatal(err)
	}
	if who, err := c.WhoAmI(t.Context()); err != nil || who.Actor != "oidc:id1" {
		t.Errorf("whoami with the ID token: %+v %v", who, err)
	}
	if code, got := signIn("id2"); code != http.StatusUnauthorized || !strings.Contains(got["error"], "none of its groups") {
		t.Errorf("a subject in no mapped group: %d %v", code, got)
	}
}

// TestTokensAcrossReplicas: replicas sharing a PostgreSQL store share the named tokens: one
// created through one replica works on the other at once, and so does its revocation.
func TestTokensAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	fleet := t.TempDir()
	a := startReplica(t, dsn, fleet, "replica-a")
	b := startReplica(t, dsn, fleet, "replica-b")
	tok, err := a.api.CreateUserToken(t.Context(), hubclient.CreateUserTokenRequest{Name: "shared", Role: "viewer", Projects: []string{"team-a"}})
	if err != nil {
		t.Fatal(err)
	}
	onB, err := hubclient.NewClient(hubclient.Config{Hub: b.APIURL(), Token: tok.Token, CAFile: b.CAPath()})
	if err != nil {
		t.Fatal(err)
	}
	if who, err := onB.WhoAmI(t.Context()); err != nil || who.Actor != "token:shared" {
		t.Fatalf("the token on the other replica: %+v %v", who, err)
	}
	if err := b.api.RevokeUserToken(t.Context(), "shared"); err != nil {
		t.Fatal(err)
	}
	onA, err := hubclient.NewClient(hubclient.Config{Hub: a.APIURL(), Token: tok.Token, CAFile: a.CAPath()})
	if err != nil {
		t.Fatal(err)
	}
	var se *hubclient.StatusError
	if _, err := onA.WhoAmI(t.Context()); !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Errorf("revoked on the other replica: %v, want 401", err)
	}
}
