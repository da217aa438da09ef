package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// TestHubRotateAdminToken: the command prints a new token that the replicas sharing the
// store take, and refuses what it cannot rotate with what to do instead.
func TestHubRotateAdminToken(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{args: nil, want: "--store is required"},
		{args: []string{"--store", "postgres://flotilla:change-me@127.0.0.1:1/x"}, want: "change-me"},
	} {
		code, _, errOut := runCLI(t, append([]string{"hub", "rotate-admin-token"}, tt.args...)...)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("rotate-admin-token %v: exit %d, %q; want a refusal with %q", tt.args, code, errOut, tt.want)
		}
	}

	dsn := pgtest.NewDatabase(t)
	st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keyFile := filepath.Join(t.TempDir(), "secrets.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("42", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := hub.New(t.Context(), hub.Options{DataDir: t.TempDir(), Fleet: t.TempDir(), AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0",
		Replica: hub.ReplicaOptions{ID: "r1", SecretsKeyFile: keyFile}}, st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub: %v", err)
		}
	}()

	data := t.TempDir()
	code, out, errOut := runCLI(t, "hub", "rotate-admin-token", "--store", dsn, "--data-dir", data)
	tok := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(tok, "flt_") || !strings.Contains(errOut, "the one before no longer opens any of them") {
		t.Fatalf("rotate-admin-token: exit %d, out %q, err %q", code, out, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(data, hub.AdminTokenFile)); strings.TrimSpace(string(got)) != tok {
		t.Errorf("--data-dir's admin.token holds %q, want the printed token", got)
	}
	client := func(token string) *hubclient.Client {
		c, err := hubclient.NewClient(hubclient.Config{Hub: h.APIURL(), Token: token, CAFile: h.CAPath()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// The hub takes the new hash once its notification arrives.
	eventually.Within(t, time.Minute, func() error {
		_, err := client(h.AdminToken()).Clusters(t.Context())
		var status *hubclient.StatusError
		if errors.As(err, &status) && status.Code == http.StatusUnauthorized {
			return nil
		}
		return fmt.Errorf("the hub still takes the old admin token: %v, want 401", err)
	})
	if _, err := client(tok).Clusters(t.Context()); err != nil {
		t.Errorf("the printed token: %v", err)
	}
}

// TestHubRefusesTheExamplePassword: the hub does not start on a PostgreSQL password that
// everyone knows (deploy/hub-ha's old one), in the URL or in PGPASSWORD.
func TestHubRefusesTheExamplePassword(t *testing.T) {
	for _, tt := range []struct {
		store string
		env   string
	}{
		{store: "postgres://flotilla:change-me@127.0.0.1:1/flotilla"},
		{store: "postgres://flotilla@127.0.0.1:1/flotilla", env: "change-me"},
	} {
		t.Setenv("PGPASSWORD", tt.env)
		// Both commands that open a shared store: the hub, and the rotation of its admin token.
		for _, args := range [][]string{
			{"hub", "--data-dir", t.TempDir(), "--store", tt.store, "--fleet", t.TempDir()},
			{"hub", "rotate-admin-token", "--store", tt.store},
		} {
			code, _, errOut := runCLI(t, args...)
			if code == 0 || !strings.Contains(errOut, `the PostgreSQL password is "change-me", the example one everyone knows`) {
				t.Errorf("%v (PGPASSWORD %q): exit %d, %q; want a refusal naming the password", args, tt.env, code, errOut)
			}
		}
	}
}
