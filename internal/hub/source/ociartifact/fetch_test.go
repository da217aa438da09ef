package ociartifact

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact/ocitest"
)

// TestFetchSigned: artifacts as oras push and flux push artifact write them, signed by the
// real cosign with the key the hub trusts, are unpacked, and the signer is what Verified says.
func TestFetchSigned(t *testing.T) {
	fx := newFixture(t, Options{})
	for _, tc := range []struct {
		name string
		push func(repo string) string
		want []string
	}{
		{"oras push of a directory", func(repo string) string {
			return ocitest.PushOras(t, fx.reg, repo, "v1.0.0", manifestDir(t, "manifests", map[string]string{"deploy.yaml": deployment, "sub/cm.yaml": "kind: ConfigMap\n"}), ocitest.Push{})
		}, []string{"manifests/deploy.yaml: " + deployment, "manifests/sub/cm.yaml: kind: ConfigMap\n"}},
		{"flux push artifact", func(repo string) string {
			return ocitest.PushFlux(t, fx.reg, repo, "v1.0.0", map[string]string{"deploy.yaml": deployment}, ocitest.Push{})
		}, []string{"deploy.yaml: " + deployment}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := "team/" + strings.ReplaceAll(tc.name, " ", "-")
			digest := tc.push(repo)
			ocitest.Sign(t, fx.reg, fx.kp, repo, digest)
			src := ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Tag: "v1.0.0", Verify: verifyWith("release")})
			dst := emptyDir(t)
			got, err := fx.f.Fetch(t.Context(), src, "", dst)
			if err != nil {
				t.Fatal(err)
			}
			want := source.Fetched{Revision: "v1.0.0@" + digest, URL: "oci://" + fx.reg.Host + "/" + repo,
				Verified: map[string]string{"key": "release", "fingerprint": fx.key.Fingerprint, "digest": digest}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Fetch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, tree(t, dst)); diff != "" {
				t.Errorf("unpacked (-want +got):\n%s", diff)
			}

			// Polled again at the same revision: nothing downloaded, nothing written.
			before := fx.counter.blobGets()
			dst2 := emptyDir(t)
			again, err := fx.f.Fetch(t.Context(), src, got.Revision, dst2)
			if err != nil {
				t.Fatal(err)
			}
			if !again.Unchanged || again.Revision != got.Revision || len(tree(t, dst2)) != 0 {
				t.Errorf("second Fetch: %+v, files %v; want Unchanged at %s, nothing written", again, tree(t, dst2), got.Revision)
			}
			if n := fx.counter.blobGets() - before; n != 0 {
				t.Errorf("second Fetch downloaded %d blobs, want none", n)
			}
		})
	}
}
