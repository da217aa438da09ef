package agentapi

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// serveArtifact serves an artifact by digest, only to an agent whose desired state refers
// to it. Plain GET with ETag and Range (http.ServeContent), so any HTTP cache can serve it too.
func (s *Server) serveArtifact(w http.ResponseWriter, r *http.Request) {
	cluster := clusterFrom(r.Context())
	digest := "sha256:" + r.PathValue("hex")
	ds, err := s.d.Store.GetDesiredState(r.Context(), cluster)
	if err != nil || !referencesDigest(ds, digest) {
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
	defer f.Close()
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

func referencesDigest(ds store.DesiredState, digest string) bool {
	assignments, err := schedule.Decode(ds.Document)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(assignments, func(a schedule.Assignment) bool { return slices.Contains(a.Digests(), digest) })
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
