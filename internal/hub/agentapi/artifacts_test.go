package agentapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// artifactHub is the agent endpoint of a hub with a real SQLite store and artifact store.
type artifactHub struct {
	t         *testing.T
	store     store.Store
	artifacts *artifact.Store
	s         *Server
}

func newArtifactHub(t *testing.T) *artifactHub {
	t.Helper()
	h := &artifactHub{t: t, store: stores[0].open(t)}
	t.Cleanup(func() { h.store.Close() })
	var err error
	if h.artifacts, err = artifact.NewStore(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	h.s = New(Deps{Store: h.store, Artifacts: h.artifacts, Metrics: NewMetrics()}, Options{})
	return h
}

// pack stores an artifact of one file and returns its digest.
func (h *artifactHub) pack(content string) string {
	h.t.Helper()
	dir := h.t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "configmap.yaml"), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	digest, _, err := h.artifacts.PutDir(h.t.Context(), dir)
	if err != nil {
		h.t.Fatal(err)
	}
	return digest
}

// assign stores cluster's desired state: one release per digest.
func (h *artifactHub) assign(cluster string, digests ...string) {
	h.t.Helper()
	var doc desired.Document
	for i, d := range digests {
		doc.Assignments = append(doc.Assignments, desired.Assignment{Release: fmt.Sprintf("release-%02d", i), Source: "apps", URL: "https://git.example/apps.git", Digest: d, Path: fmt.Sprintf("apps/%02d", i)})
	}
	data, err := desired.Encode(doc)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, _, err := h.store.PutDesiredState(h.t.Context(), cluster, data); err != nil {
		h.t.Fatal(err)
	}
}

// get downloads digest as cluster.
func (h *artifactHub) get(cluster, digest string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(context.WithValue(h.t.Context(), clusterKey{}, cluster), http.MethodGet, "/artifacts/"+strings.Replace(digest, ":", "/", 1), nil)
	req.SetPathValue("hex", strings.TrimPrefix(digest, "sha256:"))
	rec := httptest.NewRecorder()
	h.s.serveArtifact(rec, req)
	return rec
}

// TestArtifactCheckDecodesOncePerDesiredState: a cluster downloading the artifacts of its 65
// releases has its desired state decoded once, not 65 times; a change is seen on the next
// download, so a digest the change dropped is refused at once.
func TestArtifactCheckDecodesOncePerDesiredState(t *testing.T) {
	t.Parallel()
	h := newArtifactHub(t)
	for _, c := range []string{"eu-1", "us-1"} {
		if err := h.store.AddCluster(t.Context(), store.Cluster{Name: c}); err != nil {
			t.Fatal(err)
		}
	}
	var digests []string
	for i := range 65 {
		digests = append(digests, h.pack(fmt.Sprintf("release %d\n", i)))
	}
	h.assign("eu-1", digests...)
	for i, d := range digests {
		if rec := h.get("eu-1", d); rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Fatalf("download %d of an assigned artifact: %d %s", i, rec.Code, rec.Body)
		}
	}
	if n := h.s.digests.decode.Load(); n != 1 {
		t.Errorf("desired state decoded %d times for 65 downloads; want once", n)
	}

	h.assign("eu-1", digests[1:]...) // release-00's artifact is no longer assigned
	rec := h.get("eu-1", digests[0])
	if want := fmt.Sprintf("artifact %s is not assigned to cluster %q", digests[0], "eu-1"); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("download of the dropped artifact: %d %q; want 403 saying %q", rec.Code, rec.Body, want)
	}
	if rec := h.get("eu-1", digests[1]); rec.Code != http.StatusOK {
		t.Errorf("download of a still assigned artifact after the change: %d %s", rec.Code, rec.Body)
	}
	if rec := h.get("us-1", digests[1]); rec.Code != http.StatusForbidden {
		t.Errorf("download of another cluster's artifact: %d; want 403", rec.Code)
	}
	if rec := h.get("nowhere", digests[1]); rec.Code != http.StatusForbidden {
		t.Errorf("download by a cluster without a desired state: %d; want 403", rec.Code)
	}

	// Removed and added again, the cluster's generation starts over: the set of its former
	// self, at the same generation, must not be used.
	h.assign("us-1", digests[2])
	if rec := h.get("us-1", digests[2]); rec.Code != http.StatusOK {
		t.Fatalf("us-1, assigned %s: %d %s", digests[2], rec.Code, rec.Body)
	}
	if err := h.store.RemoveCluster(t.Context(), "us-1"); err != nil {
		t.Fatal(err)
	}
	if err := h.store.AddCluster(t.Context(), store.Cluster{Name: "us-1"}); err != nil {
		t.Fatal(err)
	}
	h.assign("us-1", digests[3])
	if ds, err := h.store.GetDesiredState(t.Context(), "us-1"); err != nil || ds.Generation != 1 {
		t.Fatalf("us-1 added again: generation %d, %v; want it to start over at 1", ds.Generation, err)
	}
	if rec := h.get("us-1", digests[2]); rec.Code != http.StatusForbidden {
		t.Errorf("us-1 added again, its former artifact: %d; want 403", rec.Code)
	}
}
