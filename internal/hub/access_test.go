package hub

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubapi"
)

// TestShortAdminTokenIsRefused: an empty admin.token used to switch authentication off (the
// hub compared the empty bearer of any request with the empty token). A hub now refuses to
// start on an empty or short one, and says how to get a new one.
func TestShortAdminTokenIsRefused(t *testing.T) {
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
	th := startHub(t, "", nil)
	tok, err := th.api.CreateUserToken(t.Context(), hubapi.CreateUserTokenRequest{Name: "auditor", Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hubapi.NewClient(hubapi.Config{Hub: th.APIURL(), Token: tok.Token, CAFile: th.CAPath()})
	if err != nil {
		t.Fatal(err)
	}
	who, err := c.WhoAmI(t.Context())
	if err != nil || who.Actor != "token:auditor" || len(who.Grants) != 1 || who.Grants[0].Role != "viewer" {
		t.Fatalf("whoami: %+v %v", who, err)
	}
	var se *hubapi.StatusError
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
