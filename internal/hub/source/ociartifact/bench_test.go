package ociartifact

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact/ocitest"
	"github.com/flotilla/flotilla/internal/registrytest"
)

// BenchmarkFetch: what verification adds to a fetch of a new revision (a 200-manifest
// artifact from the in-process registry), against the same fetch unverified in the same run;
// and a poll of an unchanged revision.
func BenchmarkFetch(b *testing.B) {
	reg := registrytest.Start(b, registrytest.Options{TLS: true})
	kp := ocitest.GenerateKeyPair(b)
	key, err := LoadKey("release", kp.Public)
	if err != nil {
		b.Fatal(err)
	}
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("m%03d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {k: v%d}\n", i, i)
	}
	d := ocitest.PushFlux(b, reg, "team/app", "v1", files, ocitest.Push{})
	ocitest.Sign(b, reg, kp, "team/app", d)
	newFetcher := func() *Fetcher {
		f, err := New(Options{Keys: map[string]Key{"release": key}, Transport: reg.Client.Transport})
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		name   string
		verify *v1alpha1.OCIVerify
	}{{"unverified", nil}, {"cosign-verified", verifyWith("release")}} {
		src := ociSource(reg.Host, "team/app", v1alpha1.OCISource{Tag: "v1", Verify: tc.verify})
		b.Run("new-revision/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			root := b.TempDir()
			for i := 0; b.Loop(); i++ {
				dst := filepath.Join(root, fmt.Sprint(i))
				if err := os.Mkdir(dst, 0o755); err != nil {
					b.Fatal(err)
				}
				if _, err := newFetcher().Fetch(b.Context(), src, "", dst); err != nil {
					b.Fatal(err)
				}
				os.RemoveAll(dst)
			}
		})
		b.Run("unchanged/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			f := newFetcher()
			first, err := f.Fetch(b.Context(), src, "", b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			dst := b.TempDir()
			for b.Loop() {
				if got, err := f.Fetch(b.Context(), src, first.Revision, dst); err != nil || !got.Unchanged {
					b.Fatalf("%+v %v", got, err)
				}
			}
		})
	}
}
