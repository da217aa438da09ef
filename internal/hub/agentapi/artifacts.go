package agentapi

import (
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// serveArtifact serves an artifact by digest, only to an agent whose desired state refers
// to it. Plain GET with ETag and Range (http.ServeContent), so any HTTP cache can serve it too.
func (s *Server) serveArtifact(w http.ResponseWriter, r *http.Request) {
	cluster := clusterFrom(r.Context())
	digest := "sha256:" + r.PathValue("hex")
	ds, err := s.d.Store.GetDesiredState(r.Context(), cluster)
	if err != nil || !s.digests.assigned(ds, digest) {
		http.Error(w, fmt.Sprintf("artifact %s is not assigned to cluster %q", digest, cluster), http.StatusForbidden)
		return
	}
	if s.d.EnsureArtifact != nil {
		if err := s.d.EnsureArtifact(r.Context(), digest); err != nil {
			s.d.Logger.Warn("artifact not fetched from the shared store", "digest", digest, "error", err)
		}
	}
	f, err := s.d.Artifacts.Open(digest)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, os.ErrNotExist) {
			status = http.StatusNotFound
		}
		http.Error(w, err.Error(), status)
		return
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	st, err := f.Stat()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("ETag", `"`+digest+`"`)
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	w.Header().Set("Content-Type", "application/gzip")
	http.ServeContent(countingWriter{ResponseWriter: w, n: s.d.Metrics.ArtifactBytes}, r, "", st.ModTime(), f)
}

// maxDigestSets bounds the clusters whose digests digestCache keeps; past it, an arbitrary
// one is forgotten for each new one.
const maxDigestSets = 1 << 17

// digestCache keeps what the agent endpoint checks requests against in each cluster's
// desired state (its assigned artifact digests, the releases it may report on), decoded once
// per desired state: a cluster downloading the artifacts of its 65 releases, or reporting on
// them, decodes its document once, not on every request. A set is used only for the document
// it was decoded from (the same generation and content hash), so a change that drops a digest
// or a release is seen on the next request, and a cluster removed and added again (its
// generation starting over) is not confused with its former self.
type digestCache struct {
	seed maphash.Seed

	mu     sync.Mutex
	sets   map[string]digestSet // by cluster
	decode atomic.Int64         // documents decoded, for tests
}

type digestSet struct {
	generation int64
	hash       uint64
	digests    map[string]struct{} // empty if the document did not decode
	releases   releases            // assigned (their source URL) and tombstoned ("")
	err        error               // why the document did not decode
}

func newDigestCache() *digestCache {
	return &digestCache{seed: maphash.MakeSeed(), sets: map[string]digestSet{}}
}

// assigned reports whether ds, the cluster's current desired state, refers to digest.
func (c *digestCache) assigned(ds store.DesiredState, digest string) bool {
	_, found := c.of(ds).digests[digest]
	return found
}

// of returns the set of ds, the cluster's current desired state, decoding it if the cache
// has not yet.
func (c *digestCache) of(ds store.DesiredState) digestSet {
	hash := maphash.Bytes(c.seed, ds.Document)
	c.mu.Lock()
	set, ok := c.sets[ds.Cluster]
	c.mu.Unlock()
	if ok && set.generation == ds.Generation && set.hash == hash {
		return set
	}
	set = digestSet{generation: ds.Generation, hash: hash, digests: map[string]struct{}{}}
	doc, err := desired.DecodeDocument(ds.Document)
	c.decode.Add(1)
	if err != nil {
		set.err = fmt.Errorf("desired state of cluster %q: %w", ds.Cluster, err)
	} else {
		set.releases = make(releases, len(doc.Assignments)+len(doc.Removed))
		for _, t := range doc.Removed {
			set.releases[t.Release] = ""
		}
		for _, a := range doc.Assignments {
			set.releases[a.Release] = a.URL
			for _, d := range a.Digests() {
				set.digests[d] = struct{}{}
			}
		}
	}
	c.mu.Lock()
	if _, known := c.sets[ds.Cluster]; !known && len(c.sets) >= maxDigestSets {
		for k := range c.sets {
			delete(c.sets, k)
			break
		}
	}
	// A concurrent request may have stored a newer set meanwhile; the next one that sees the
	// other document replaces it again. Either is only used for its document.
	c.sets[ds.Cluster] = set
	c.mu.Unlock()
	return set
}

// countingWriter counts the bytes of an artifact response.
type countingWriter struct {
	http.ResponseWriter
	n prometheus.Counter
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(float64(n))
	return n, err
}
