package controller

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// pollSources starts a poll of every source that is due and has none in flight, each in its
// own goroutine, and applies the results of the polls that finished. A source whose Git server
// hangs stalls only itself: the others keep polling. A new revision is packed into an
// artifact; a failing source keeps its last artifact, so nothing is pruned because a source
// failed. It reports whether any source's artifact changed.
func (c *Controller) pollSources(ctx context.Context) bool {
	fleet := c.scheduled()
	urgent := c.takeUrgent() // a webhook's: polled now, or after the poll in flight
	if fleet != nil {
		for _, s := range fleet.Sources {
			name := s.Metadata.Name
			fetched := s.Spec.Git != nil || c.fetcher(s) != nil
			if fetched && c.inflight[name] && urgent[name] {
				c.markUrgent(name)
			}
			if !fetched || c.inflight[name] || (!urgent[name] && clock.Since(c.clock, c.polled[name]) < s.Spec.IntervalOrDefault()) {
				continue
			}
			c.polled[name] = c.clock.Now()
			c.inflight[name] = true
			go func() {
				art, verified, err := c.pollSource(ctx, s)
				select {
				case c.results <- pollResult{source: s, art: art, verified: verified, err: err}:
				case <-ctx.Done():
				}
			}()
		}
	}
	changed := false
	for {
		select {
		case r := <-c.results:
			delete(c.inflight, r.source.Metadata.Name)
			changed = c.applyPoll(ctx, r) || changed
		default:
			return changed
		}
	}
}

type pollResult struct {
	source   v1alpha1.Source
	art      schedule.Artifact
	verified map[string]string
	err      error
}

func (c *Controller) applyPoll(ctx context.Context, r pollResult) bool {
	name := r.source.Metadata.Name
	st := store.SourceStatus{Name: name, URL: sourceURL(r.source), CheckedAt: c.clock.Now()}
	changed := false
	c.mu.Lock()
	prev, had := c.artifacts[name]
	c.pollFailed[name] = r.err != nil
	if r.err != nil {
		st.Revision, st.Digest, st.Error = prev.Revision, prev.Digest, r.err.Error()
		c.log.Warn("source poll failed; clusters keep their state", "source", name, "error", r.err)
	} else {
		st.Revision, st.Digest = r.art.Revision, r.art.Digest
		delete(c.fresh, r.art.Digest)
		if !had || prev != r.art {
			c.artifacts[name] = r.art
			changed = true
			c.log.Info("source revision", "source", name, "revision", r.art.Revision, "digest", r.art.Digest)
		}
	}
	c.mu.Unlock()
	if changed {
		detail := map[string]any{"source": name, "url": r.art.URL, "revision": r.art.Revision, "digest": r.art.Digest, "previous": prev.Revision}
		if r.verified != nil {
			detail["verified"] = r.verified // who signed what is applied
		}
		c.d.Record(ctx, audit.Event{Actor: "hub", Action: "source.revision", Detail: detail})
	}
	if err := c.d.Store.PutSourceStatus(ctx, st); err != nil {
		c.log.Warn("store source status", "source", name, "error", err)
	}
	return changed
}

func (c *Controller) pollSource(ctx context.Context, s v1alpha1.Source) (art schedule.Artifact, verified map[string]string, err error) {
	start := c.clock.Now()
	defer func() {
		c.d.Metrics.PollDuration.WithLabelValues(s.Metadata.Name).Observe(clock.Since(c.clock, start).Seconds())
		if err != nil {
			c.d.Metrics.PollErrors.WithLabelValues(s.Metadata.Name).Inc()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c.mu.Lock()
	prev := c.artifacts[s.Metadata.Name]
	c.mu.Unlock()
	dir, err := os.MkdirTemp(c.opts.WorkDir, "checkout-")
	if err != nil {
		return schedule.Artifact{}, nil, err
	}
	defer os.RemoveAll(dir)

	var revision, url string
	if s.Spec.Git != nil {
		git := s.Spec.Git
		// The poller's policy resolves the credentials and refuses what the operator does not allow.
		g := source.Git{Name: s.Metadata.Name, URL: git.URL, Branch: git.Branch, Tag: git.Tag, Semver: git.Semver, Commit: git.Commit,
			Credentials: git.Credentials, CredentialsFile: git.CredentialsFile, Insecure: git.Insecure}
		res, err := c.d.Poller.Resolve(ctx, g)
		if err != nil {
			return schedule.Artifact{}, nil, err
		}
		// The artifact carries the URL redacted: it reaches the store, the audit trail and agents.
		revision, url = res.Revision, source.Redact(git.URL)
		if prev.Revision == revision && prev.URL == url && c.d.Artifacts.Has(prev.Digest) {
			return prev, nil, nil
		}
		if err := c.d.Poller.Checkout(ctx, g, res.Commit, dir); err != nil {
			return schedule.Artifact{}, nil, err
		}
	} else {
		f := c.fetcher(s)
		prevRevision := ""
		if c.d.Artifacts.Has(prev.Digest) {
			prevRevision = prev.Revision
		}
		res, err := f.Fetch(ctx, s, prevRevision, dir)
		if err == nil && res.Unchanged && prev.URL != res.URL {
			// The same revision at another location (the fleet moved the source): fetch it
			// from there, since Unchanged left dir empty.
			res, err = f.Fetch(ctx, s, "", dir)
		}
		if err != nil {
			return schedule.Artifact{}, nil, err
		}
		if res.Unchanged {
			return prev, nil, nil
		}
		revision, url, verified = res.Revision, res.URL, res.Verified
	}
	// Protect the artifact from garbage collection from before it exists until applyPoll has
	// made it part of the state that scheduling and GC see.
	c.mu.Lock()
	c.freshPending++
	c.mu.Unlock()
	digest, _, err := c.d.Artifacts.PutDir(ctx, dir)
	c.mu.Lock()
	c.freshPending--
	if err == nil {
		c.fresh[digest] = true
	}
	c.mu.Unlock()
	if err != nil {
		return schedule.Artifact{}, nil, fmt.Errorf("source '%s': pack %s: %w", s.Metadata.Name, revision, err)
	}
	// The other replicas serve it from the shared store: not assigned before it is there.
	if err := c.d.ShareArtifact(ctx, digest); err != nil {
		return schedule.Artifact{}, nil, fmt.Errorf("source '%s': share artifact of %s: %w", s.Metadata.Name, revision, err)
	}
	return schedule.Artifact{Source: s.Metadata.Name, URL: url, Revision: revision, Digest: digest}, verified, nil
}

// fetcher is the Fetcher for a source that is not Git; nil when the hub has none for its kind.
func (c *Controller) fetcher(s v1alpha1.Source) source.Fetcher {
	switch {
	case s.Spec.Helm != nil:
		return c.d.Helm
	case s.Spec.OCI != nil:
		return c.d.OCI
	}
	return nil
}

// sourceURL is where a source is, credentials removed, for its status.
func sourceURL(s v1alpha1.Source) string {
	switch {
	case s.Spec.Git != nil:
		return source.Redact(s.Spec.Git.URL)
	case s.Spec.Helm != nil:
		return source.Redact(s.Spec.Helm.Repository) + " chart " + s.Spec.Helm.Chart
	case s.Spec.OCI != nil:
		return source.Redact(s.Spec.OCI.URL)
	}
	return ""
}
