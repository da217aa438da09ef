package bundle

import (
	"archive/tar"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/desired"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Format is the format of a bundle's manifest, and the prefix of the message its signature
// covers.
const Format = "flotilla.dev/bundle/v1"

// Names of a bundle's fixed entries.
const (
	manifestEntry  = "manifest.json"
	signatureEntry = "manifest.sig"
	desiredEntry   = "desired.pb"
)

// artifactEntry is the entry name of an artifact's packed file.
func artifactEntry(hex string) string { return "artifacts/sha256-" + hex + ".tar.gz" }

// Manifest describes a bundle; the CA's signature covers it.
type Manifest struct {
	Format string `json:"format"`
	// Cluster is the cluster whose desired state the bundle carries.
	Cluster string `json:"cluster"`
	// Generation is the desired state's generation: an agent takes a bundle only when it is
	// newer than what it has.
	Generation int64     `json:"generation"`
	CreatedAt  time.Time `json:"createdAt"`
	// ReportsIngestedThrough is the highest report seq the hub had ingested from the cluster
	// when it wrote the bundle: the agent drops the reports up to it from its outbox.
	ReportsIngestedThrough uint64 `json:"reportsIngestedThrough"`
	// CAFingerprint names the CA that signed the bundle (hex SHA-256 of its certificate), so
	// that a bundle from another hub is refused by name.
	CAFingerprint string     `json:"caFingerprint"`
	Desired       FileDigest `json:"desired"`
	// Artifacts are the artifacts the desired state needs, each once, in entry order.
	Artifacts []ArtifactRef `json:"artifacts"`
}

// ArtifactRef is one artifact in a bundle.
type ArtifactRef struct {
	Digest string `json:"digest"` // sha256:<hex>
	Size   int64  `json:"size"`
}

// Limits bound what Read accepts. A zero field takes its DefaultLimits value.
type Limits struct {
	// MaxBytes bounds the whole file.
	MaxBytes int64
	// MaxArtifacts bounds the number of artifacts.
	MaxArtifacts int
	// MaxArtifactBytes bounds one artifact's packed file.
	MaxArtifactBytes int64
	// MaxDesiredBytes bounds the desired state document.
	MaxDesiredBytes int64
}

// DefaultLimits are generous for a cluster's releases and small enough for an agent's disk.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 4 << 30, MaxArtifacts: 1000, MaxArtifactBytes: artifact.DefaultLimits().MaxBytes, MaxDesiredBytes: 16 << 20}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxArtifacts <= 0 {
		l.MaxArtifacts = d.MaxArtifacts
	}
	if l.MaxArtifactBytes <= 0 {
		l.MaxArtifactBytes = d.MaxArtifactBytes
	}
	if l.MaxDesiredBytes <= 0 {
		l.MaxDesiredBytes = d.MaxDesiredBytes
	}
	return l
}

// maxManifestBytes and maxSignatureBytes bound the small entries.
const (
	maxManifestBytes  = 1 << 20
	maxSignatureBytes = 1 << 10
)

// NeededDigests are the artifacts a desired state's assignments need, each once, in their
// order: each assignment's Digests.
func NeededDigests(assignments []desired.Assignment) []string {
	var out []string
	for _, as := range assignments {
		for _, d := range as.Digests() {
			if d != "" && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// WriteOptions are what a bundle holds and who signs it.
type WriteOptions struct {
	// Desired is written in its wire form, as the hub sends it over Watch.
	Desired                desired.State
	CreatedAt              time.Time
	ReportsIngestedThrough uint64
	// CA is the certificate of Signer's key: its fingerprint goes into the manifest.
	CA     *x509.Certificate
	Signer crypto.Signer
	// Open opens an artifact's packed file and says its size.
	Open func(ctx context.Context, digest string) (io.ReadCloser, int64, error)
	// Progress, when set, is told the bytes written so far after each artifact.
	Progress func(written, total int64)
}

// Write writes the bundle of o.Desired to w. Each artifact is checked against its digest as
// it is copied: a corrupt file in the hub's store fails the write (the reader would refuse the
// bundle anyway), with w holding a partial bundle.
func Write(ctx context.Context, w io.Writer, o WriteOptions) (Manifest, error) {
	ds := o.Desired
	msg, err := desired.StateToProto(ds)
	if err != nil {
		return Manifest{}, fmt.Errorf("bundle of cluster %q: %w", ds.Cluster, err)
	}
	doc, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return Manifest{}, fmt.Errorf("bundle of cluster %q: desired state: %w", ds.Cluster, err)
	}
	m := Manifest{
		Format: Format, Cluster: ds.Cluster, Generation: ds.Generation, CreatedAt: o.CreatedAt.UTC(),
		ReportsIngestedThrough: o.ReportsIngestedThrough, CAFingerprint: Fingerprint(o.CA), Desired: digestOf(doc),
		Artifacts: []ArtifactRef{},
	}
	type opened struct {
		rc   io.ReadCloser
		size int64
	}
	var files []opened
	defer func() {
		for _, f := range files {
			f.rc.Close()
		}
	}()
	total := int64(len(doc))
	for _, d := range NeededDigests(ds.Assignments) {
		if _, err := artifact.ParseDigest(d); err != nil {
			return Manifest{}, fmt.Errorf("bundle of cluster %q: %w", m.Cluster, err)
		}
		rc, size, err := o.Open(ctx, d)
		if err != nil {
			return Manifest{}, fmt.Errorf("bundle of cluster %q: artifact %s: %w", m.Cluster, d, err)
		}
		files = append(files, opened{rc, size})
		m.Artifacts = append(m.Artifacts, ArtifactRef{Digest: d, Size: size})
		total += size
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		return Manifest{}, err
	}
	sig, err := sign(o.Signer, Format, manifest)
	if err != nil {
		return Manifest{}, fmt.Errorf("bundle of cluster %q: sign: %w", m.Cluster, err)
	}
	tw := tar.NewWriter(w)
	for _, e := range []struct {
		name string
		data []byte
	}{{manifestEntry, manifest}, {signatureEntry, sig}, {desiredEntry, doc}} {
		if err := writeEntry(tw, e.name, int64(len(e.data)), bytesReader(e.data)); err != nil {
			return Manifest{}, fmt.Errorf("bundle of cluster %q: %w", m.Cluster, err)
		}
	}
	written := int64(len(doc))
	for i, a := range m.Artifacts {
		if err := ctx.Err(); err != nil {
			return Manifest{}, err
		}
		v, _ := artifact.NewVerifier(a.Digest)
		hex, _ := artifact.ParseDigest(a.Digest)
		if err := writeEntry(tw, artifactEntry(hex), a.Size, io.TeeReader(files[i].rc, v)); err != nil {
			return Manifest{}, fmt.Errorf("bundle of cluster %q: %w", m.Cluster, err)
		}
		if err := v.Verify(); err != nil {
			return Manifest{}, fmt.Errorf("bundle of cluster %q: %w", m.Cluster, err)
		}
		written += a.Size
		if o.Progress != nil {
			o.Progress(written, total)
		}
	}
	if err := tw.Close(); err != nil {
		return Manifest{}, fmt.Errorf("bundle of cluster %q: %w", m.Cluster, err)
	}
	return m, nil
}

// ReadOptions say whom a bundle must come from and where its artifacts go.
type ReadOptions struct {
	// CA is the certificate whose key must have signed the bundle: the hub CA the agent
	// pinned when it joined. Required.
	CA *x509.Certificate
	// Cluster, when set, is the only cluster whose bundle is accepted.
	Cluster string
	// ArtifactDir, when set, receives each artifact as sha256-<hex>.tar.gz once its digest is
	// checked; otherwise artifacts are checked and discarded.
	ArtifactDir string
	Limits      Limits
}

// Bundle is a bundle read and verified.
type Bundle struct {
	Manifest Manifest
	// Desired is the bundle's desired state, read from its wire form: a document that cannot
	// be read (desired.FromProto) refuses the bundle.
	Desired desired.State
	// Artifacts maps each artifact's digest to its file in ReadOptions.ArtifactDir.
	Artifacts map[string]string
}

// ArtifactFile is the name of an artifact's file in ReadOptions.ArtifactDir.
func ArtifactFile(digest string) string {
	hex, _ := artifact.ParseDigest(digest)
	return "sha256-" + hex + ".tar.gz"
}

// Read reads and verifies a bundle: the CA's signature over the manifest (before anything
// else is read), the cluster, the desired state and each artifact against the manifest, and
// that the artifacts are exactly those the desired state needs. Any failure names what is
// wrong; artifacts already written to ArtifactDir are then removed.
func Read(ctx context.Context, r io.Reader, o ReadOptions) (_ *Bundle, err error) {
	if o.CA == nil {
		return nil, errors.New("bundle: no CA to verify it against")
	}
	lim := o.Limits.withDefaults()
	rd := newReader("bundle", r, lim.MaxBytes)
	manifest, err := rd.readAll(manifestEntry, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(manifest, Format); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	var m Manifest
	if err := decodeStrict(manifest, &m); err != nil {
		return nil, fmt.Errorf("bundle: manifest: %w", err)
	}
	sig, err := rd.readAll(signatureEntry, maxSignatureBytes)
	if err != nil {
		return nil, err
	}
	if fp := Fingerprint(o.CA); m.CAFingerprint != fp {
		return nil, fmt.Errorf("bundle: signed by the CA %.16s…, not by the hub CA this agent trusts (%.16s…): a bundle from another hub", m.CAFingerprint, fp)
	}
	if err := verify(o.CA, Format, manifest, sig); err != nil {
		return nil, fmt.Errorf("bundle: signature does not verify against the hub CA %.16s…: the bundle was altered or not signed by this hub: %w", m.CAFingerprint, err)
	}
	what := fmt.Sprintf("bundle of cluster %q generation %d", m.Cluster, m.Generation)
	if o.Cluster != "" && m.Cluster != o.Cluster {
		return nil, fmt.Errorf("%s: this agent is cluster %q", what, o.Cluster)
	}
	if len(m.Artifacts) > lim.MaxArtifacts {
		return nil, fmt.Errorf("%s: %d artifacts; at most %d", what, len(m.Artifacts), lim.MaxArtifacts)
	}
	if m.Desired.Size > lim.MaxDesiredBytes {
		return nil, fmt.Errorf("%s: desired state is %d bytes; at most %d", what, m.Desired.Size, lim.MaxDesiredBytes)
	}
	rd.what = what
	doc, err := rd.readAll(desiredEntry, m.Desired.Size)
	if err != nil {
		return nil, err
	}
	if err := m.Desired.check(what, desiredEntry, doc); err != nil {
		return nil, err
	}
	msg := &agentv1.DesiredState{}
	if err := proto.Unmarshal(doc, msg); err != nil {
		return nil, fmt.Errorf("%s: desired state: %w", what, err)
	}
	if msg.GetCluster() != m.Cluster || msg.GetGeneration() != m.Generation {
		return nil, fmt.Errorf("%s: desired state is of cluster %q generation %d", what, msg.GetCluster(), msg.GetGeneration())
	}
	ds, err := desired.FromProto(msg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := sameDigests(what, NeededDigests(ds.Assignments), m.Artifacts); err != nil {
		return nil, err
	}
	b := &Bundle{Manifest: m, Desired: ds, Artifacts: map[string]string{}}
	defer func() {
		if err != nil {
			for _, p := range b.Artifacts {
				os.Remove(p)
			}
		}
	}()
	for _, a := range m.Artifacts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if a.Size > lim.MaxArtifactBytes {
			return nil, fmt.Errorf("%s: artifact %s is %d bytes; at most %d", what, a.Digest, a.Size, lim.MaxArtifactBytes)
		}
		hex, _ := artifact.ParseDigest(a.Digest)
		hdr, err := rd.next(artifactEntry(hex), a.Size)
		if err != nil {
			return nil, err
		}
		if hdr.Size != a.Size {
			return nil, fmt.Errorf("%s: artifact %s is %d bytes, the manifest says %d", what, a.Digest, hdr.Size, a.Size)
		}
		path, err := rd.copyArtifact(o.ArtifactDir, a)
		if err != nil {
			return nil, err
		}
		if path != "" {
			b.Artifacts[a.Digest] = path
		}
	}
	if err := rd.end(); err != nil {
		return nil, err
	}
	return b, nil
}

// sameDigests checks that the manifest lists exactly the artifacts the desired state needs.
func sameDigests(what string, needed []string, listed []ArtifactRef) error {
	seen := map[string]bool{}
	for _, a := range listed {
		if _, err := artifact.ParseDigest(a.Digest); err != nil {
			return fmt.Errorf("%s: manifest: %w", what, err)
		}
		if seen[a.Digest] {
			return fmt.Errorf("%s: manifest lists artifact %s twice", what, a.Digest)
		}
		seen[a.Digest] = true
		if !slices.Contains(needed, a.Digest) {
			return fmt.Errorf("%s: artifact %s is not one the desired state needs", what, a.Digest)
		}
	}
	for _, d := range needed {
		if !seen[d] {
			return fmt.Errorf("%s: the desired state needs artifact %s, which the bundle lacks", what, d)
		}
	}
	return nil
}

// copyArtifact copies the current entry to dir (or nowhere) and checks its digest; the file
// gets its name only once it matches.
func (rd *reader) copyArtifact(dir string, a ArtifactRef) (string, error) {
	v, _ := artifact.NewVerifier(a.Digest)
	var dst io.Writer = v
	var tmp *os.File
	if dir != "" {
		var err error
		if tmp, err = os.CreateTemp(dir, ".artifact-*.part"); err != nil {
			return "", fmt.Errorf("%s: artifact %s: %w", rd.what, a.Digest, err)
		}
		defer func() {
			_ = tmp.Close()       // closed and checked on success; this covers the early returns
			os.Remove(tmp.Name()) // gone after the rename
		}()
		dst = io.MultiWriter(tmp, v)
	}
	n, err := io.Copy(dst, rd.tr)
	if err != nil {
		return "", rd.readErr("artifact "+a.Digest, err)
	}
	if n != a.Size {
		return "", fmt.Errorf("%s: artifact %s truncated", rd.what, a.Digest)
	}
	if err := v.Verify(); err != nil {
		return "", fmt.Errorf("%s: %w", rd.what, err)
	}
	if tmp == nil {
		return "", nil
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	path := filepath.Join(dir, ArtifactFile(a.Digest))
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("%s: artifact %s: %w", rd.what, a.Digest, err)
	}
	return path, nil
}
