package ociartifact

import (
	"strings"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact/ocitest"
)

// TestSemverPicksNewestSigned: of the versions satisfying the range, the newest signed by a
// trusted key is fetched; a newer unsigned one is skipped (and said so in Verified), a
// pre-release only when the range names one.
func TestSemverPicksNewestSigned(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, Options{})
	const repo = "team/versions"
	digests := map[string]string{}
	for _, v := range []struct {
		tag    string
		signed bool
	}{{"v1.0.0", true}, {"v1.1.0", true}, {"v1.2.0", false}, {"v1.3.0-rc.1", true}, {"v2.0.0", true}, {"not-a-version", true}} {
		digests[v.tag] = ocitest.PushFlux(t, fx.reg, repo, v.tag, map[string]string{"version.yaml": v.tag + "\n"}, ocitest.Push{})
		if v.signed {
			ocitest.Sign(t, fx.reg, fx.kp, repo, digests[v.tag])
		}
	}
	tests := []struct {
		rng, want, skipped string
	}{
		{"^1.0.0", "v1.1.0", "v1.2.0 ("},
		{"~1.0", "v1.0.0", ""},
		{">=1.3.0-0 <2.0.0", "v1.3.0-rc.1", ""},
		{">=1.0.0", "v2.0.0", ""},
	}
	for _, tc := range tests {
		t.Run(tc.rng, func(t *testing.T) {
			dst := emptyDir(t)
			got, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Semver: tc.rng, Verify: verifyWith("release")}), "", dst)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want + "@" + digests[tc.want]; got.Revision != want {
				t.Errorf("revision %s, want %s", got.Revision, want)
			}
			if files := tree(t, dst); len(files) != 1 || files[0] != "version.yaml: "+tc.want+"\n" {
				t.Errorf("unpacked %v", files)
			}
			if s := got.Verified["skipped"]; tc.skipped == "" && s != "" || !strings.HasPrefix(s, tc.skipped) {
				t.Errorf("skipped %q, want %q...", s, tc.skipped)
			}
		})
	}
	t.Run("no signed version satisfies", func(t *testing.T) {
		_, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Semver: "~1.2", Verify: verifyWith("release")}), "", emptyDir(t))
		wantError(t, err, "source 'app'", "no version satisfying ~1.2 is signed by 'release'", "v1.2.0 (no cosign signature found for "+digests["v1.2.0"])
	})
	t.Run("no version satisfies", func(t *testing.T) {
		_, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Semver: "^3"}), "", emptyDir(t))
		wantError(t, err, "source 'app'", "no tag satisfies semver ^3")
	})
	t.Run("without verification the newest satisfying", func(t *testing.T) {
		got, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Semver: "^1.0.0"}), "", emptyDir(t))
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != "v1.2.0@"+digests["v1.2.0"] || got.Verified != nil {
			t.Errorf("got %+v, want v1.2.0 unverified", got)
		}
	})
}

// TestDigestAndLatest: a digest pin fetches that manifest whatever the tags say (revision:
// the digest alone); no tag, semver or digest means "latest".
func TestDigestAndLatest(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, Options{})
	const repo = "team/pinned"
	old := ocitest.PushFlux(t, fx.reg, repo, "latest", map[string]string{"v.yaml": "old\n"}, ocitest.Push{})
	ocitest.Sign(t, fx.reg, fx.kp, repo, old)
	cur := ocitest.PushFlux(t, fx.reg, repo, "latest", map[string]string{"v.yaml": "new\n"}, ocitest.Push{})
	ocitest.Sign(t, fx.reg, fx.kp, repo, cur)

	dst := emptyDir(t)
	got, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Digest: old, Verify: verifyWith("release")}), "", dst)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != old || tree(t, dst)[0] != "v.yaml: old\n" || got.Verified["digest"] != old {
		t.Errorf("digest pin: %+v, files %v", got, tree(t, dst))
	}
	dst = emptyDir(t)
	got, err = fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Verify: verifyWith("release")}), "", dst)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != "latest@"+cur || tree(t, dst)[0] != "v.yaml: new\n" {
		t.Errorf("latest: %+v, files %v", got, tree(t, dst))
	}
}
