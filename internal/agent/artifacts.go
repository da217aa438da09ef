package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/flotilla/flotilla/internal/artifact"
)

// artifactRoot returns the directory holding the unpacked artifact, downloading it from the
// hub first if the cache does not have it. The download is verified against the digest before
// it is unpacked, so a corrupted or substituted artifact is never applied; the cache survives
// restarts, so an agent whose hub is down keeps reconciling what it has.
func (a *Agent) artifactRoot(ctx context.Context, digest string) (string, error) {
	hex, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", fmt.Errorf("artifact %q: not a sha256 digest", digest)
	}
	dir := filepath.Join(a.st.artifactDir(), hex)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}

	tmp, err := os.CreateTemp(a.st.artifactDir(), hex+".*.download")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	defer func() { _ = tmp.Close() }() // closed and checked on success; this covers the early returns
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.id.HubURL+"/artifacts/sha256/"+hex, nil)
	if err != nil {
		return "", err
	}
	// The hub may hold the request in its download queue for up to a minute before it
	// answers: the agent's client has no overall timeout (only ctx ends the wait), so the
	// held request keeps its place rather than joining the back of the queue again.
	resp, err := a.httpClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("artifact %s: download: %w", digest, err)
	}
	defer resp.Body.Close()
	if d, busy := retryAfterResponse(resp, a.clock.Now()); busy {
		return "", &hubBusyError{Digest: digest, RetryIn: withJitter(d)}
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return "", fmt.Errorf("artifact %s: download: %s: %s", digest, resp.Status, strings.TrimSpace(string(msg)))
	}
	if _, err := io.Copy(tmp, io.LimitReader(resp.Body, artifact.DefaultLimits().MaxBytes+1)); err != nil {
		return "", fmt.Errorf("artifact %s: download: %w", digest, err)
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := artifact.VerifyFile(tmp.Name(), digest); err != nil {
		return "", err
	}
	f, err := os.Open(tmp.Name())
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	if err := unpackArtifact(ctx, a.st.artifactDir(), hex, f); err != nil {
		return "", fmt.Errorf("artifact %s: %w", digest, err)
	}
	return dir, nil
}

// unpackArtifact unpacks r into cache/hex through a staging directory of its own: two
// projects' lanes (or a lane and a bundle import) may unpack the same artifact at once, and
// the one that renames second finds the other's copy in place.
func unpackArtifact(ctx context.Context, cache, hex string, r io.Reader) error {
	staging, err := os.MkdirTemp(cache, hex+".*.unpacking")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	if err := artifact.Unpack(ctx, r, staging, artifact.DefaultLimits()); err != nil {
		return err
	}
	dir := filepath.Join(cache, hex)
	if err := os.Rename(staging, dir); err != nil {
		if _, statErr := os.Stat(dir); statErr == nil {
			return nil
		}
		return err
	}
	return nil
}
