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
	t.Parallel()
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

// TestUnchangedReverified: an unchanged revision is checked again when the keys it is
// verified with change: with the source's new key list (no download), and after a restart
// whose key of the same name is another key (refused).
func TestUnchangedReverified(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, Options{})
	other := ocitest.GenerateKeyPair(t)
	otherKey, err := LoadKey("release", other.Public)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := LoadKey("second", other.Public)
	f, err := New(Options{Keys: map[string]Key{"release": fx.key, "second": second}, Transport: fx.counter})
	if err != nil {
		t.Fatal(err)
	}
	d := ocitest.PushFlux(t, fx.reg, "team/app", "v1", map[string]string{"deploy.yaml": deployment}, ocitest.Push{})
	ocitest.Sign(t, fx.reg, fx.kp, "team/app", d)
	src := ociSource(fx.reg.Host, "team/app", v1alpha1.OCISource{Tag: "v1", Verify: verifyWith("release")})
	first, err := f.Fetch(t.Context(), src, "", emptyDir(t))
	if err != nil {
		t.Fatal(err)
	}

	// The fleet now also accepts "second": verified again, nothing downloaded.
	src.Spec.OCI.Verify = verifyWith("second", "release")
	before := fx.counter.blobGets()
	dst := emptyDir(t)
	got, err := f.Fetch(t.Context(), src, first.Revision, dst)
	if err != nil || !got.Unchanged || len(tree(t, dst)) != 0 {
		t.Fatalf("with another key list: %+v, %v, files %v; want Unchanged", got, err, tree(t, dst))
	}
	if n := fx.counter.blobGets() - before; n != 1 { // the signature's payload, not the layer
		t.Errorf("%d blobs read, want 1 (the signature payload)", n)
	}

	// Only "second" now, which did not sign it: refused although the revision is the same.
	src.Spec.OCI.Verify = verifyWith("second")
	_, err = f.Fetch(t.Context(), src, first.Revision, emptyDir(t))
	wantError(t, err, "signature by key 'second' does not verify")

	// A restarted hub whose key "release" is another key: refused, not taken as unchanged.
	restarted, err := New(Options{Keys: map[string]Key{"release": otherKey}, Transport: fx.reg.Client.Transport})
	if err != nil {
		t.Fatal(err)
	}
	src.Spec.OCI.Verify = verifyWith("release")
	_, err = restarted.Fetch(t.Context(), src, first.Revision, emptyDir(t))
	wantError(t, err, "signature by key 'release' does not verify")
}
