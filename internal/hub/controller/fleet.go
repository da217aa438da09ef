package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// loadFleet reads the fleet configuration; an invalid one is reported and the last valid one
// stays in force. It reports whether the configuration in force changed.
func (c *Controller) loadFleet(ctx context.Context) bool {
	fleet, rev, err := c.readFleet(ctx)
	st := store.FleetStatus{UpdatedAt: c.clock.Now()}
	c.mu.Lock()
	if err != nil {
		st.Revision, st.Error = c.fleetRev, err.Error()
		c.rejectedCommit = ""
		if c.rejected.err != nil && err == c.rejected.err {
			c.rejectedCommit = c.rejected.commit
		}
		c.mu.Unlock()
		if st.Error != c.loggedError {
			// Once per error, not at every re-read of the same commit.
			c.log.Warn("fleet configuration rejected; the last valid one stays in force", "revision", st.Revision, "error", err)
			c.loggedError = st.Error
		}
		c.putFleetStatus(ctx, st)
		return false
	}
	c.rejectedCommit, c.loggedError = "", ""
	st.Revision = rev
	if rev == c.fleetRev {
		c.mu.Unlock()
		c.putFleetStatus(ctx, st)
		return false
	}
	c.log.Info("fleet configuration loaded", "revision", rev, "sources", len(fleet.Sources), "releases", len(fleet.Releases))
	prev := c.fleetRev
	c.fleet, c.fleetRev = fleet, rev
	c.mu.Unlock()
	c.putFleetStatus(ctx, st)
	d := map[string]any{"revision": rev, "previous": prev, "fleet": source.Redact(c.opts.Fleet), "sources": len(fleet.Sources), "releases": len(fleet.Releases)}
	if fc := c.fleetCommit; fc.Commit != "" && strings.Contains(rev, fc.Commit) {
		d["author"], d["message"] = fc.Author, fc.Message
	}
	c.d.Record(ctx, audit.Event{Actor: "hub", Action: "fleet.revision", Detail: d})
	return true
}

func (c *Controller) putFleetStatus(ctx context.Context, st store.FleetStatus) {
	if err := c.d.Store.PutFleetStatus(ctx, st); err != nil {
		c.log.Warn("store fleet status", "revision", st.Revision, "error", err)
	}
}

func (c *Controller) readFleet(ctx context.Context) (*v1alpha1.Fleet, string, error) {
	o := c.opts
	if st, err := os.Stat(o.Fleet); err == nil && st.IsDir() {
		rev, err := v1alpha1.DirRevision(o.Fleet)
		if err != nil {
			return nil, "", err
		}
		if rev == c.currentFleetRev() {
			return nil, rev, nil // unchanged: not re-parsed
		}
		f, err := v1alpha1.LoadDir(o.Fleet)
		return f, rev, err
	}
	g := source.Git{Name: "fleet", URL: o.Fleet, Branch: o.FleetBranch, Operator: true}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := c.d.Poller.Resolve(ctx, g)
	if err != nil {
		return nil, "", err
	}
	c.fleetCommit = res
	if res.Commit == c.currentFleetRev() {
		return nil, res.Commit, nil
	}
	if r := c.rejected; r.commit == res.Commit {
		return nil, "", r.err // the same commit is not checked out and parsed again
	}
	dir, err := os.MkdirTemp(o.WorkDir, "fleet-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	if err := c.d.Poller.Checkout(ctx, g, res.Commit, dir); err != nil {
		return nil, "", inRepository(err, dir, o.Fleet, o.FleetPath, res.Commit)
	}
	f, err := v1alpha1.LoadDir(filepath.Join(dir, filepath.FromSlash(o.FleetPath)))
	if err != nil {
		err = inRepository(err, dir, o.Fleet, o.FleetPath, res.Commit)
		c.rejected.commit, c.rejected.err = res.Commit, err
	}
	return f, res.Commit, err
}

// inRepository rewrites an error about the temporary checkout dir of commit so that it names
// what a user can look up: files relative to the fleet repository, at the short commit, with
// the line where the parser knows it ("fleet/releases.yaml@272e309 line 38: ..."). The
// message is what `flotilla status`, the dashboard and the hub's log show, long after the
// checkout is gone.
func inRepository(err error, dir, url, fleetPath, commit string) error {
	at := shortCommit(commit)
	prefix := dir + string(filepath.Separator)
	var invalid *v1alpha1.InvalidError
	if errors.As(err, &invalid) {
		out := &v1alpha1.InvalidError{Problems: make([]v1alpha1.Problem, len(invalid.Problems))}
		for i, p := range invalid.Problems {
			if p.File != "" {
				p.File = strings.TrimPrefix(p.File, filepath.ToSlash(prefix)) + "@" + at
				if line, rest, ok := cutLine(p.Message); ok {
					// The parser's line is the exact one; the document's start is the fallback.
					p.Line, _ = strconv.Atoi(line)
					p.Message = rest
				}
			}
			out.Problems[i] = p
		}
		return out
	}
	if errors.Is(err, fs.ErrNotExist) && fleetPath != "" && strings.Contains(err.Error(), prefix) {
		return fmt.Errorf("fleet path %q not found in %s@%s (--fleet-path)", fleetPath, source.Redact(url), at)
	}
	msg := strings.ReplaceAll(err.Error(), prefix, "")
	return fmt.Errorf("fleet repository %s@%s: %s", source.Redact(url), at, strings.ReplaceAll(msg, dir, "."))
}

// yamlLine finds the line a YAML parser names in its message.
var yamlLine = regexp.MustCompile(`^(yaml: (?:unmarshal errors: )?)line (\d+): `)

// cutLine takes the line number out of a YAML parser's message: "yaml: line 38: did not
// find expected key" gives "38" and "yaml: did not find expected key".
func cutLine(msg string) (line, rest string, ok bool) {
	m := yamlLine.FindStringSubmatchIndex(msg)
	if m == nil {
		return "", msg, false
	}
	return msg[m[4]:m[5]], msg[m[2]:m[3]] + msg[m[1]:], true
}

// shortCommit is a commit hash as git abbreviates it.
func shortCommit(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

func (c *Controller) currentFleetRev() string {
	// Only the run goroutine writes fleetRev (under c.mu, for readers elsewhere) and only it
	// calls this, so the read needs no lock.
	return c.fleetRev
}
