package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/secrets"
)

// TestComputeSOPSRelease: the hub holds no key, so it plans a release with decryption sops on
// the ciphertext, as committed (the Secret is added, not a render error), and never shows a
// value; a release without decryption that meets an encrypted document errors, as its agents
// would.
func TestComputeSOPSRelease(t *testing.T) {
	t.Parallel()
	k, err := secrets.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := secrets.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: apps}\nstringData: {password: plan-plaintext}\n"),
		"yaml", []string{k.Recipient}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	withSOPS := release("web", "", "web")
	withSOPS.Spec.Decryption = &v1alpha1.Decryption{Provider: v1alpha1.DecryptionSOPS}
	for _, tc := range []struct {
		name   string
		rel    v1alpha1.Release
		want   []string
		errors bool
	}{
		{"decryption sops: planned on the ciphertext", withSOPS, []string{"web changed x1 changed:ConfigMap/web added:Secret/db", "web changed x1 changed:ConfigMap/web added:Secret/db"}, false},
		{"no decryption: an error, as at the agent", release("web", "", "web"), []string{"web changed x2 error"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fixture(t, 2, &v1alpha1.Fleet{Sources: []v1alpha1.Source{{Metadata: v1alpha1.ObjectMeta{Name: "apps"}}},
				Releases: []v1alpha1.Release{tc.rel, release("api", "", "api")}})
			in.Dir = artifactDirs(t, map[string]map[string]string{
				oldDigest: {"web/cm.yaml": cm("web", "1"), "api/cm.yaml": cm("api", "1")},
				newDigest: {"web/cm.yaml": cm("web", "2"), "web/db.yaml": string(enc), "api/cm.yaml": cm("api", "1")},
			})
			p, err := Compute(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			got := summary(p)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("groups:\n%s\nwant:\n%s\nproblems: %v", strings.Join(got, "\n"), strings.Join(tc.want, "\n"), p.Problems)
			}
			if p.Errors != tc.errors {
				t.Errorf("errors %v, want %v: %+v", p.Errors, tc.errors, p.Problems)
			}
			if strings.Contains(fmt.Sprintf("%+v", p), "plan-plaintext") {
				t.Error("the plan shows the plaintext")
			}
		})
	}
}
