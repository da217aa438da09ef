package bundle

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/desired"
)

// BenchmarkBundle writes and reads (verifying everything) a bundle of 8 artifacts of 4 MiB
// of incompressible data; BenchmarkBundle/sha256 is the baseline of the same run: hashing the
// same bytes once, the least any verification costs.
func BenchmarkBundle(b *testing.B) {
	const n, size = 8, 4 << 20
	ca := newCA(b)
	blobs := map[string][]byte{}
	ds := desired.State{Cluster: "bench", Generation: 1}
	for i := range n {
		data := make([]byte, size)
		rand.Read(data)
		sum := sha256.Sum256(data)
		d := fmt.Sprintf("sha256:%x", sum)
		blobs[d] = data
		ds.Assignments = append(ds.Assignments, desired.Assignment{Release: fmt.Sprint("r", i), Digest: d})
	}
	open := func(_ context.Context, d string) (io.ReadCloser, int64, error) {
		return io.NopCloser(bytes.NewReader(blobs[d])), int64(len(blobs[d])), nil
	}
	var file bytes.Buffer
	b.Run("write", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(n * size)
		for b.Loop() {
			file.Reset()
			if _, err := Write(b.Context(), &file, WriteOptions{Desired: ds, CA: ca.Certificate(), Signer: ca.Signer(), Open: open}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(n * size)
		for b.Loop() {
			if _, err := Read(b.Context(), bytes.NewReader(file.Bytes()), ReadOptions{CA: ca.Certificate(), Limits: Limits{MaxArtifactBytes: size}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(n * size)
		for b.Loop() {
			for d, data := range blobs {
				v, _ := artifact.NewVerifier(d)
				if _, err := v.Write(data); err != nil {
					b.Fatal(err)
				}
				if err := v.Verify(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
