package hub

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/flotilla/flotilla/internal/artifact"
)

// Artifacts with several replicas: the replica that polls a source packs the artifact into its
// own artifact directory, as a single hub does, and uploads it to the shared store. Another
// replica asked for an artifact it lacks fetches it from the shared store once, verifies its
// digest and keeps it on its disk; from then on it serves it like any other. So every replica
// serves every assigned artifact, whichever replica polled, including after that one died.

// shareArtifact uploads a freshly packed artifact to the shared store (nothing without one).
func (h *Hub) shareArtifact(ctx context.Context, digest string) error {
	if h.repl.shared == nil {
		return nil
	}
	f, err := h.artifacts.Open(digest)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	return h.repl.shared.PutArtifact(ctx, digest, data)
}

// ensureArtifact makes sure the artifact is on this replica's disk, fetching it from the
// shared store if it is not. Without a shared store it does nothing: a missing artifact is
// then simply missing.
func (h *Hub) ensureArtifact(ctx context.Context, digest string) error {
	if h.repl.shared == nil || h.artifacts.Has(digest) {
		return nil
	}
	final, err := h.artifacts.Path(digest)
	if err != nil {
		return err
	}
	data, err := h.repl.shared.GetArtifact(ctx, digest)
	if err != nil {
		return err
	}
	v, err := artifact.NewVerifier(digest)
	if err != nil {
		return err
	}
	_, _ = v.Write(data)
	if err := v.Verify(); err != nil {
		return fmt.Errorf("artifact %s from the shared store: %w", digest, err)
	}
	// Write beside the final name and rename, so a concurrent reader never sees half a file.
	tmp, err := os.CreateTemp(filepath.Dir(final), ".tmp-fetch-*")
	if err != nil {
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		tmp.Close()
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	h.log.Info("artifact fetched from the shared store", "digest", digest, "bytes", len(data))
	return nil
}
