package replica

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

// ShareArtifact uploads a freshly packed artifact to the shared store (nothing without one).
func (r *Replication) ShareArtifact(ctx context.Context, digest string) error {
	if r.shared == nil {
		return nil
	}
	f, err := r.artifacts.Open(digest)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	return r.shared.PutArtifact(ctx, digest, data)
}

// EnsureArtifact makes sure the artifact is on this replica's disk, fetching it from the
// shared store if it is not. Without a shared store it does nothing: a missing artifact is
// then simply missing.
func (r *Replication) EnsureArtifact(ctx context.Context, digest string) error {
	if r.shared == nil || r.artifacts.Has(digest) {
		return nil
	}
	final, err := r.artifacts.Path(digest)
	if err != nil {
		return err
	}
	data, err := r.shared.GetArtifact(ctx, digest)
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
		_ = tmp.Close() // already failing: the first error is the one returned
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close() // already failing: the first error is the one returned
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	r.log.Info("artifact fetched from the shared store", "digest", digest, "bytes", len(data))
	return nil
}

// DeleteArtifactsExcept deletes the shared store's artifacts not in keep (nothing without a
// shared store).
func (r *Replication) DeleteArtifactsExcept(ctx context.Context, keep map[string]bool) (int, error) {
	if r.shared == nil {
		return 0, nil
	}
	return r.shared.DeleteArtifactsExcept(ctx, keep)
}

// PutSharedFile stores data under name in the shared store (nothing without one).
func (r *Replication) PutSharedFile(ctx context.Context, name string, data []byte) error {
	if r.shared == nil {
		return nil
	}
	return r.shared.PutSharedFile(ctx, name, data)
}

// SharedFiles returns the shared store's files among names (none without a shared store).
func (r *Replication) SharedFiles(ctx context.Context, names []string) (map[string][]byte, error) {
	if r.shared == nil {
		return map[string][]byte{}, nil
	}
	return r.shared.SharedFiles(ctx, names)
}
