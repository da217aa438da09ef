package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/gittest"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// lockedBuffer is a log destination the hub's goroutines may share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serveGitHTTP serves the repositories under root over git's smart HTTP protocol (git
// http-backend), behind basic auth.
func serveGitHTTP(t *testing.T, root, user, pass string) string {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git: %v", err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSourceURLCredentialsRedacted plants a source URL with a password and checks every
// surface the URL reaches: the hub's log, the store, the audit trail, the user API (sources,
// status, the dashboard's fleet document), the desired state sent to the agent, and the
// error of a failing poll.
func TestSourceURLCredentialsRedacted(t *testing.T) {
	t.Parallel()
	const secret = "pl4nted-s3cret"
	root := t.TempDir()
	gittest.CommitFiles(t, filepath.Join(root, "apps"), map[string][]byte{
		"web/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n"),
	})
	base := serveGitHTTP(t, root, "deploy", secret)
	withSecret := func(path string) string {
		return strings.Replace(base, "http://", "http://deploy:"+secret+"@", 1) + path
	}
	fleetDir := t.TempDir()
	fleet := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: "%s", branch: main, insecure: true}
  interval: 1m
---
apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: broken}
spec:
  git: {url: "%s", branch: main, insecure: true}
  interval: 1m
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: apps
  path: web
  targets: [{selector: {}}]
  namespace: web
`, withSecret("/apps"), withSecret("/missing"))
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	th := startHub(t, fleetDir, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	a := th.addAgent(t, "alpha", nil)

	// The desired state sent to the agent.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	stream, err := a.client.Watch(ctx, connect.NewRequest(&agentv1.WatchRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var desired string
	for desired == "" && stream.Receive() {
		for _, as := range stream.Msg().GetDesired().GetAssignments() {
			if as.GetDigest() != "" {
				b, _ := json.Marshal(stream.Msg())
				desired = string(b)
				if !strings.Contains(as.GetUrl(), "deploy:xxxxx@") {
					t.Errorf("assignment URL %q; want the source URL, redacted", as.GetUrl())
				}
			}
		}
	}
	stream.Close()
	if desired == "" {
		t.Fatalf("no desired state with an artifact: %v", stream.Err())
	}

	// The failing source's error reaches the store.
	var sources []hubclient.SourceView
	eventually.Within(t, 30*time.Second, func() error {
		if sources, err = th.api.Sources(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(sources) != 2 || sources[1].Name != "broken" || sources[1].Error == "" {
			return fmt.Errorf("sources %+v; want source broken with its poll error", sources)
		}
		return nil
	})
	surfaces := map[string]any{"desired state sent to the agent": desired, "hub log": logs.String(), "sources API": sources}
	if surfaces["status API"], err = th.api.Status(t.Context()); err != nil {
		t.Fatal(err)
	}
	if surfaces["audit trail"], err = th.api.Audit(t.Context(), hubclient.AuditFilter{}); err != nil {
		t.Fatal(err)
	}
	if surfaces["store: source statuses"], err = th.store.ListSourceStatuses(t.Context()); err != nil {
		t.Fatal(err)
	}
	docs, err := th.store.ListDesiredStates(t.Context())
	if err != nil || len(docs) == 0 {
		t.Fatalf("desired states: %v, %v", docs, err)
	}
	var stored strings.Builder
	for _, d := range docs {
		stored.Write(d.Document) // the document itself, not its base64
	}
	surfaces["store: desired states"] = stored.String()
	if surfaces["store: assignment statuses"], err = th.store.ListStatuses(t.Context()); err != nil {
		t.Fatal(err)
	}
	for name, v := range surfaces {
		s, ok := v.(string)
		if !ok {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			s = string(b)
		}
		if strings.Contains(s, secret) {
			t.Errorf("%s shows the URL's password:\n%s", name, s)
		}
	}
	// The URL does show, redacted, where it is useful.
	for _, s := range sources {
		if !strings.Contains(s.URL, "deploy:xxxxx@") {
			t.Errorf("source %s URL %q; want it shown with the password redacted", s.Name, s.URL)
		}
	}
	if b, _ := json.Marshal(surfaces["audit trail"]); !strings.Contains(string(b), "deploy:xxxxx@") {
		t.Errorf("the audit trail does not name the source URL, redacted: %s", b)
	}
}
