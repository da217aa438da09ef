package e2e

import (
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
)

// gitServer serves the repositories under root over Git's smart HTTP protocol (git
// http-backend) on a fixed loopback address, and can be taken down and brought back.
type gitServer struct {
	t       *testing.T
	addr    string
	handler http.Handler
	srv     *http.Server
}

func newGitServer(t *testing.T, root string) *gitServer {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	g := &gitServer{t: t, addr: freeAddr(t), handler: &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	}}
	g.up()
	t.Cleanup(g.down)
	return g
}

func (g *gitServer) url(repo string) string { return "http://" + g.addr + "/" + repo }

func (g *gitServer) up() {
	g.t.Helper()
	var ln net.Listener
	eventually.Within(g.t, 5*time.Second, func() (err error) { // the port may linger briefly after down
		ln, err = net.Listen("tcp", g.addr)
		return err
	})
	g.srv = &http.Server{Handler: g.handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = g.srv.Serve(ln) }() // ends with ErrServerClosed when the test closes it
}

func (g *gitServer) down() {
	if g.srv != nil {
		g.srv.Close()
		g.srv = nil
	}
}
