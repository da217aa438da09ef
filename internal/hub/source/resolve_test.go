package source

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-cmp/cmp"
)

func resolve(t *testing.T, p *Poller, g Git) Resolved {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.Resolve(ctx, g)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return res
}

func TestResolveFollowsBranch(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	first := r.commit("first commit\n\nwith a body\n", map[string]string{"a.yaml": "a: 1\n"})
	srv := serveGit(t, filepath.Dir(r.dir), "", "")

	urls := []struct{ name, url string }{
		{"plain path", r.dir},
		{"file URL", "file://" + r.dir},
		{"http URL", srv.URL + "/repo"},
	}
	for _, u := range urls {
		t.Run(u.name, func(t *testing.T) {
			p := NewPoller(t.TempDir())
			for _, g := range []Git{
				{Name: "platform", URL: u.url},                 // the remote's default branch
				{Name: "platform", URL: u.url, Branch: "main"}, // the same, by name
			} {
				got := resolve(t, p, g)
				want := Resolved{
					Revision: "main@sha1:" + first,
					Commit:   first,
					Ref:      "refs/heads/main",
					Author:   "Ada <ada@example.com>",
					Message:  "first commit\n\nwith a body",
					Time:     commitTime(1),
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Resolve(%+v) (-want +got):\n%s", g, diff)
				}
			}
		})
	}

	// The branch moves: every form sees the new head on its next poll.
	second := r.commit("second", map[string]string{"a.yaml": "a: 2\n"})
	for _, u := range urls {
		t.Run(u.name+" after a push", func(t *testing.T) {
			p := NewPoller(t.TempDir())
			g := Git{Name: "platform", URL: u.url}
			resolve(t, p, g)
			r.commit("third", map[string]string{"b.yaml": "b"})
			third := r.git("rev-parse", "HEAD")
			if got := resolve(t, p, g); got.Commit != third {
				t.Errorf("after a push Commit = %s, want %s", got.Commit, third)
			}
			r.git("reset", "-q", "--hard", second) // a force-push back
			if got := resolve(t, p, g); got.Commit != second {
				t.Errorf("after a reset Commit = %s, want %s", got.Commit, second)
			}
		})
	}
}

func TestResolveDefaultBranchIsRemoteHEAD(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	r.commit("on main", nil)
	r.git("checkout", "-q", "-b", "trunk")
	trunk := r.commit("on trunk", nil)
	p := NewPoller(t.TempDir())
	got := resolve(t, p, Git{Name: "s", URL: r.dir})
	if got.Ref != "refs/heads/trunk" || got.Commit != trunk || got.Revision != "trunk@sha1:"+trunk {
		t.Errorf("Resolve = %+v, want the trunk branch at %s", got, trunk)
	}
}

func TestResolveTags(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	tagged := r.commit("release", map[string]string{"a": "1"})
	r.git("tag", "light")
	r.git("tag", "-a", "heavy", "-m", "annotated")
	r.git("tag", "-a", "heavier", "-m", "a tag of a tag", "heavy")
	r.commit("after", map[string]string{"a": "2"})
	blob := r.git("hash-object", "-w", "--stdin")
	r.git("tag", "not-a-commit", blob)

	p := NewPoller(t.TempDir())
	for _, tag := range []string{"light", "heavy", "heavier"} {
		got := resolve(t, p, Git{Name: "s", URL: r.dir, Tag: tag})
		if got.Commit != tagged || got.Ref != "refs/tags/"+tag || got.Revision != tag+"@sha1:"+tagged {
			t.Errorf("tag %s: Resolve = %+v, want commit %s", tag, got, tagged)
		}
	}
	_, err := p.Resolve(context.Background(), Git{Name: "s", URL: r.dir, Tag: "not-a-commit"})
	if err == nil || !strings.Contains(err.Error(), "not a commit") {
		t.Errorf("tag of a blob: err = %v, want 'not a commit'", err)
	}

	// Tags that move or go away upstream do so in the mirror too.
	r.git("tag", "-d", "light")
	r.git("tag", "-f", "-a", "heavy", "-m", "moved")
	moved := r.git("rev-parse", "HEAD")
	if got := resolve(t, p, Git{Name: "s", URL: r.dir, Tag: "heavy"}); got.Commit != moved {
		t.Errorf("moved tag: Commit = %s, want %s", got.Commit, moved)
	}
	_, err = p.Resolve(context.Background(), Git{Name: "s", URL: r.dir, Tag: "light"})
	if want := "source 's': tag 'light' in " + r.dir + ": not found"; err == nil || err.Error() != want {
		t.Errorf("deleted tag: err = %v, want %q", err, want)
	}
}

func TestResolveSemver(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	commits := map[string]string{}
	for _, tag := range []string{"v1.0.0", "1.2.0", "v1.10.0", "v2.0.0-rc.1", "release-3", "latest", "v2.1.0", "v3.0"} {
		commits[tag] = r.commit("release "+tag, map[string]string{"version": tag})
		if strings.HasPrefix(tag, "v2") {
			r.git("tag", "-a", tag, "-m", tag) // annotated: must be peeled
		} else {
			r.git("tag", tag)
		}
	}
	p := NewPoller(t.TempDir())

	tests := []struct {
		rng     string
		want    string // tag, or "" for an error
		wantErr string
	}{
		{rng: ">=1.0.0 <2.0.0", want: "v1.10.0"}, // numeric, not lexical, order
		{rng: "~1.2", want: "1.2.0"},             // no leading v
		{rng: "^2.0", want: "v2.1.0"},            // pre-release not taken
		{rng: "^2.0.0-rc.0 <2.1.0", want: "v2.0.0-rc.1"},
		{rng: "*", want: "v3.0"}, // "v3.0" is lenient semver; release-3 and latest are ignored
		{rng: "^4", wantErr: "source 's': no tag matches semver ^4 in " + r.dir},
		{rng: "not a range", wantErr: "source 's': invalid semver range \"not a range\""},
	}
	for _, tt := range tests {
		t.Run(tt.rng, func(t *testing.T) {
			got, err := p.Resolve(context.Background(), Git{Name: "s", URL: r.dir, Semver: tt.rng})
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve = %+v, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Commit != commits[tt.want] || got.Ref != "refs/tags/"+tt.want {
				t.Errorf("Resolve = %s (%s), want tag %s at %s", got.Ref, got.Commit, tt.want, commits[tt.want])
			}
		})
	}
}

func TestResolvePinnedCommit(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	old := r.commit("old", map[string]string{"a": "1"})
	r.commit("new", map[string]string{"a": "2"})
	p := NewPoller(t.TempDir())

	got := resolve(t, p, Git{Name: "s", URL: r.dir, Commit: old})
	want := Resolved{Revision: "sha1:" + old, Commit: old, Author: "Ada <ada@example.com>", Message: "old", Time: commitTime(1)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Upper case is the same commit.
	if got := resolve(t, p, Git{Name: "s", URL: r.dir, Commit: strings.ToUpper(old)}); got.Commit != old {
		t.Errorf("upper-case pin resolved to %s", got.Commit)
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	r.commit("only", map[string]string{"a": "1"})
	missing := strings.Repeat("ab", 20)
	empty := newRepo(t)

	tests := []struct {
		name    string
		g       Git
		wantErr string
	}{
		{"missing branch", Git{Name: "platform", URL: r.dir, Branch: "nope"}, "source 'platform': branch 'nope' not found in " + r.dir},
		{"missing tag", Git{Name: "platform", URL: r.dir, Tag: "v9"}, "source 'platform': tag 'v9' in " + r.dir + ": not found"},
		{"missing commit", Git{Name: "platform", URL: r.dir, Commit: missing}, "source 'platform': commit " + missing + " not found in " + r.dir},
		{"short commit", Git{Name: "platform", URL: r.dir, Commit: "abc123"}, "source 'platform': commit \"abc123\": want a full 40-digit hex hash"},
		{"two selectors", Git{Name: "platform", URL: r.dir, Branch: "main", Tag: "v1"}, "source 'platform': set at most one of branch, tag, semver and commit"},
		{"relative path", Git{Name: "platform", URL: "repo"}, "source 'platform': URL repo: want an absolute path"},
		{"unsupported scheme", Git{Name: "platform", URL: "ftp://example.com/repo"}, "source 'platform': URL ftp://example.com/repo: want https://"},
		{"no name", Git{URL: r.dir}, "source with URL " + r.dir + ": empty name"},
		{"no repository", Git{Name: "platform", URL: "/nonexistent/repo"}, "source 'platform': fetch /nonexistent/repo: repository not found"},
		{"empty repository", Git{Name: "platform", URL: empty.dir}, "source 'platform': fetch " + empty.dir + ": remote repository is empty"},
		{"token over a local path is ignored, wrong method for http is not", Git{Name: "platform", URL: "http://127.0.0.1:1/r", Auth: Credentials{SSHPrivateKey: []byte("k")}}, "source 'platform': fetch http://127.0.0.1:1/r: ssh key credentials need an ssh URL, not http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := NewPoller(t.TempDir())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := p.Resolve(ctx, tt.g)
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Resolve = %+v, %v; want error %q", got, err, tt.wantErr)
			}
		})
	}
}

func TestResolveOverHTTPWithBasicAuth(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	head := r.commit("first", map[string]string{"a": "1"})
	srv := serveGit(t, filepath.Dir(r.dir), "deploy", "s3cret")
	url := srv.URL + "/repo"

	tests := []struct {
		name    string
		auth    Credentials
		wantErr string
	}{
		{"no credentials", Credentials{}, "source 'platform': fetch " + url + ": authentication required"},
		{"wrong password", Credentials{Username: "deploy", Password: "guess"}, "source 'platform': fetch " + url + ": credentials basic(deploy:redacted) rejected: authentication required"},
		{"token instead", Credentials{Token: "t0ken"}, "source 'platform': fetch " + url + ": credentials token(redacted) rejected: authentication required"},
		{"right credentials", Credentials{Username: "deploy", Password: "s3cret"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPoller(t.TempDir())
			got, err := p.Resolve(context.Background(), Git{Name: "platform", URL: url, Auth: tt.auth})
			if tt.wantErr == "" {
				if err != nil || got.Commit != head {
					t.Fatalf("Resolve = %+v, %v; want commit %s", got, err, head)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Resolve = %+v, %v; want error %q", got, err, tt.wantErr)
			}
			if !errors.Is(err, transport.ErrAuthenticationRequired) {
				t.Errorf("error does not wrap transport.ErrAuthenticationRequired")
			}
			if strings.Contains(err.Error(), "guess") {
				t.Errorf("error reveals the password: %v", err)
			}
		})
	}
}

func TestResolveUnreachableFailsWithinDeadline(t *testing.T) {
	t.Parallel()
	// A server that was stopped: connection refused, at once.
	stopped := serveGit(t, t.TempDir(), "", "")
	stopped.srv.Close()

	// A server that accepts connections and never answers: only the
	// deadline ends the wait.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	silent := ln.Addr().String()

	tests := []struct {
		name    string
		g       Git
		wantErr string
	}{
		{"stopped http server", Git{Name: "platform", URL: stopped.URL + "/repo"}, "connection refused"},
		{"silent http server", Git{Name: "platform", URL: "http://" + silent + "/repo"}, "context deadline exceeded"},
		{"silent ssh server", Git{Name: "platform", URL: "ssh://git@" + silent + "/repo", Auth: sshCredentials(t, silent)}, "context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := NewPoller(t.TempDir())
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			_, err := p.Resolve(ctx, tt.g)
			elapsed := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Resolve error = %v, want %q", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "source 'platform': fetch ") {
				t.Errorf("error %q does not say what failed", err)
			}
			if elapsed > 3*time.Second {
				t.Errorf("Resolve took %v with a 1s deadline", elapsed)
			}
		})
	}
}

func TestResolveUnchangedRepositoryFetchesNothing(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	first := r.commit("first", map[string]string{"a": "1"})
	r.git("tag", "-a", "v1.0.0", "-m", "annotated tags are advertised twice (peeled)")
	r.git("branch", "other")
	srv := serveGit(t, filepath.Dir(r.dir), "", "")
	p := NewPoller(t.TempDir())
	g := Git{Name: "s", URL: srv.URL + "/repo"}

	if got := resolve(t, p, g); got.Commit != first {
		t.Fatalf("Commit = %s, want %s", got.Commit, first)
	}
	if n := srv.packs.Load(); n != 1 {
		t.Fatalf("first Resolve made %d object transfers, want 1", n)
	}
	objects := countObjects(t, p)

	for range 3 {
		if got := resolve(t, p, g); got.Commit != first {
			t.Fatalf("Commit = %s, want %s", got.Commit, first)
		}
	}
	if n := srv.packs.Load(); n != 1 {
		t.Errorf("unchanged repository: %d object transfers in all, want still 1", n)
	}
	if got := countObjects(t, p); got != objects {
		t.Errorf("mirror has %d object files, had %d", got, objects)
	}

	second := r.commit("second", map[string]string{"b": "2"})
	if got := resolve(t, p, g); got.Commit != second {
		t.Fatalf("Commit = %s, want %s", got.Commit, second)
	}
	if n := srv.packs.Load(); n != 2 {
		t.Errorf("after a push: %d object transfers, want 2", n)
	}
}

// countObjects counts the files holding objects in all mirrors of p.
func countObjects(t *testing.T, p *Poller) int {
	t.Helper()
	n := 0
	if err := filepath.Walk(p.cacheDir, func(path string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.Contains(path, string(filepath.Separator)+"objects"+string(filepath.Separator)) {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestResolveMaxAgeSharesOneFetch(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	first := r.commit("first", nil)
	srv := serveGit(t, filepath.Dir(r.dir), "", "")
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	p := NewPollerWithOptions(t.TempDir(), Options{MaxAge: time.Minute, Now: func() time.Time { return now }})
	url := srv.URL + "/repo"

	// Three releases of one source in one poll: one fetch.
	resolve(t, p, Git{Name: "a", URL: url})
	requests := srv.lists.Load() + srv.packs.Load()
	second := r.commit("second", nil)
	for _, g := range []Git{{Name: "b", URL: url, Branch: "main"}, {Name: "c", URL: url, Commit: first}} {
		if got := resolve(t, p, g); got.Commit != first {
			t.Errorf("%s: Commit = %s, want %s from the shared fetch", g.Name, got.Commit, first)
		}
	}
	if n := srv.lists.Load() + srv.packs.Load() - requests; n != 0 {
		t.Errorf("%d requests within MaxAge, want none", n)
	}

	now = now.Add(time.Minute) // the next poll
	if got := resolve(t, p, Git{Name: "a", URL: url}); got.Commit != second {
		t.Errorf("next poll: Commit = %s, want %s", got.Commit, second)
	}
}

func TestResolveConcurrently(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	head := r.commit("first", map[string]string{"a": "1"})
	r.git("tag", "v1.0.0")
	srv := serveGit(t, filepath.Dir(r.dir), "", "")
	p := NewPoller(t.TempDir())
	sources := []Git{
		{Name: "a", URL: srv.URL + "/repo"},
		{Name: "b", URL: srv.URL + "/repo", Tag: "v1.0.0"},
		{Name: "c", URL: r.dir, Semver: "^1"},
		{Name: "d", URL: "file://" + r.dir, Branch: "main"},
	}
	var wg sync.WaitGroup
	errs := make([]error, 16)
	commits := make([]string, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := p.Resolve(context.Background(), sources[i%len(sources)])
			commits[i], errs[i] = res.Commit, err
		}()
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil || commits[i] != head {
			t.Errorf("Resolve %d = %s, %v; want %s", i, commits[i], errs[i], head)
		}
	}
	if n := srv.packs.Load(); n != 1 {
		t.Errorf("%d object transfers for one URL, want 1", n)
	}
}

func TestResolveRecreatesDamagedMirror(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	head := r.commit("first", nil)
	cache := t.TempDir()
	resolve(t, NewPoller(cache), Git{Name: "s", URL: r.dir})
	mirrors, _ := filepath.Glob(filepath.Join(cache, "*.git"))
	if len(mirrors) != 1 {
		t.Fatalf("mirrors = %v, want one", mirrors)
	}
	os.Remove(filepath.Join(mirrors[0], "HEAD"))
	if got := resolve(t, NewPoller(cache), Git{Name: "s", URL: r.dir}); got.Commit != head {
		t.Errorf("Commit = %s, want %s", got.Commit, head)
	}
}

func TestResolveReusesMirrorAcrossPollers(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	head := r.commit("first", map[string]string{"a": "1"})
	srv := serveGit(t, filepath.Dir(r.dir), "", "")
	cache := filepath.Join(t.TempDir(), "not", "yet", "there")
	g := Git{Name: "s", URL: srv.URL + "/repo"}

	resolve(t, NewPoller(cache), g)
	// A hub restart: a new Poller on the same cache transfers nothing.
	if got := resolve(t, NewPoller(cache), g); got.Commit != head {
		t.Errorf("Commit = %s, want %s", got.Commit, head)
	}
	if n := srv.packs.Load(); n != 1 {
		t.Errorf("%d object transfers, want 1", n)
	}
}
