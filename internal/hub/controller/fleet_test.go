package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
)

func TestInRepository(t *testing.T) {
	t.Parallel()
	const (
		dir    = "/var/lib/flotilla/fleet-1234"
		url    = "https://user:secret@git.example.com/platform/fleet.git"
		commit = "272e309a4b1c5d6e7f8091a2b3c4d5e6f7089a1b"
	)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{
			name: "a validation problem names the file at the commit",
			err: &v1alpha1.InvalidError{Problems: []v1alpha1.Problem{
				{File: dir + "/fleet/releases.yaml", Line: 38, Object: "Release/web", Field: "spec.source", Message: `source "nowhere" is not defined`},
			}},
			want: `fleet/releases.yaml@272e309 line 38: Release/web: spec.source: source "nowhere" is not defined`,
		},
		{
			name: "a YAML error gives its line",
			err: &v1alpha1.InvalidError{Problems: []v1alpha1.Problem{
				{File: dir + "/fleet/releases.yaml", Object: "document 2", Message: "yaml: line 38: did not find expected key"},
				{File: dir + "/fleet/sources.yaml", Object: "document 1", Message: `yaml: unmarshal errors: line 7: key "url" already set in map`},
			}},
			want: "fleet/releases.yaml@272e309 line 38: document 2: yaml: did not find expected key\n" +
				`fleet/sources.yaml@272e309 line 7: document 1: yaml: unmarshal errors: key "url" already set in map`,
		},
		{
			name: "a missing fleet path says which flag",
			err:  fmt.Errorf("fleet directory %s/fleet: %w", dir, &fs.PathError{Op: "lstat", Path: dir + "/fleet", Err: fs.ErrNotExist}),
			want: `fleet path "fleet" not found in https://user:xxxxx@git.example.com/platform/fleet.git@272e309 (--fleet-path)`,
		},
		{
			name: "any other error loses the temporary directory",
			err:  fmt.Errorf("'fleet/x': mkdir %s/fleet/x: permission denied", dir),
			want: "fleet repository https://user:xxxxx@git.example.com/platform/fleet.git@272e309: 'fleet/x': mkdir fleet/x: permission denied",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := inRepository(tt.err, dir, url, "fleet", commit)
			if got.Error() != tt.want {
				t.Errorf("inRepository(%q):\n got %q\nwant %q", tt.err, got, tt.want)
			}
			var invalid *v1alpha1.InvalidError
			if errors.As(tt.err, &invalid) && !errors.As(got, &invalid) {
				t.Errorf("inRepository(%q) is no longer an *InvalidError", tt.err)
			}
		})
	}
}

// statusStore is a fakeStore that keeps the last fleet status.
type statusStore struct {
	*fakeStore
	mu    sync.Mutex
	fleet store.FleetStatus
}

func (s *statusStore) PutFleetStatus(_ context.Context, st store.FleetStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fleet = st
	return nil
}

// syncBuffer collects log lines written from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A fleet commit whose configuration is rejected is named, in the stored status and in the
// log, by its file in the repository and the short commit: never by the temporary checkout.
func TestRejectedFleetCommitNamesFilesInTheRepository(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	r, err := git.PlainInitWithOptions(repoDir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"}})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(content string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(repoDir, "fleet"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repoDir, "fleet", "fleet.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		wt, err := r.Worktree()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add("fleet/fleet.yaml"); err != nil {
			t.Fatal(err)
		}
		h, err := wt.Commit("change", &git.CommitOptions{Author: &object.Signature{Name: "PE", Email: "pe@example.com", When: time.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	good := commit(fleetYAML)
	// Line 12 of the file: a mapping value where none is allowed.
	bad := commit(strings.Replace(fleetYAML, "  source: platform\n", "  source: platform\n    broken: [\n", 1))

	st := &statusStore{fakeStore: &fakeStore{fail: map[string]int{}}}
	arts, err := artifact.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	workDir := t.TempDir()
	c, err := New(Deps{Store: st, Poller: source.NewPoller(t.TempDir()), Artifacts: arts, Lease: heldLease{},
		Clock: clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)), Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		Options{Fleet: "file://" + repoDir, FleetBranch: "main", FleetPath: "fleet", WorkDir: workDir})
	if err != nil {
		t.Fatal(err)
	}
	// The configuration in force is the good commit's; the bad one is the newest.
	c.fleet, c.fleetRev = &v1alpha1.Fleet{}, good
	for range 2 {
		c.loadFleet(t.Context())
	}

	want := fmt.Sprintf("fleet/fleet.yaml@%s line 12: document 2: yaml: mapping values are not allowed", bad[:7])
	if got := st.fleet.Error; !strings.HasPrefix(got, want) || strings.Contains(got, workDir) {
		t.Errorf("stored fleet error = %q, want it to start with %q and not name %s", got, want, workDir)
	}
	if st.fleet.Revision != good {
		t.Errorf("stored fleet revision = %q, want the one in force, %s", st.fleet.Revision, good)
	}
	if v := c.View(); v.RejectedCommit != bad || v.FleetURL != "file://"+repoDir {
		t.Errorf("View() = rejected %q, URL %q; want %s and file://%s", v.RejectedCommit, v.FleetURL, bad, repoDir)
	}
	if n := strings.Count(logs.String(), "fleet configuration rejected"); n != 1 || !strings.Contains(logs.String(), bad[:7]) || strings.Contains(logs.String(), workDir) {
		t.Errorf("want one log line naming %s and no temporary directory, got %d:\n%s", bad[:7], n, logs.String())
	}

	// Back to a valid commit: nothing is rejected any more.
	c.fleetRev = commit(fleetYAML + "\n# fixed\n")
	c.loadFleet(t.Context())
	if v := c.View(); v.RejectedCommit != "" || st.fleet.Error != "" {
		t.Errorf("after a fix: rejected %q, error %q", v.RejectedCommit, st.fleet.Error)
	}
}

// Right after a start no source has been polled yet: the releases wait for it, which is
// logged at INFO, once per release. A source whose poll failed is a problem: WARN.
func TestSourceNotPolledYetIsNotAWarning(t *testing.T) {
	t.Parallel()
	c := newTestController(t, restartedHub(t), clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	var logs syncBuffer
	c.log = slog.New(slog.NewTextHandler(&logs, nil))
	c.loadFleet(t.Context())
	c.reschedule(t.Context())
	if out := logs.String(); strings.Contains(out, "level=WARN") ||
		strings.Count(out, `level=INFO msg="release waits for the first poll of its source" release=baseline source=platform clusters=`) != 1 {
		t.Errorf("before the first poll, want one INFO line for baseline and no WARN:\n%s", out)
	}

	fleet := c.View().Fleet
	c.applyPoll(t.Context(), pollResult{source: fleet.Sources[0], err: errors.New("source 'platform': dial tcp: connection refused")})
	c.reschedule(t.Context())
	if out := logs.String(); !strings.Contains(out, `level=WARN msg="scheduling problem" release=baseline`) {
		t.Errorf("after a failed poll, want the scheduling problems at WARN:\n%s", out)
	}
}
