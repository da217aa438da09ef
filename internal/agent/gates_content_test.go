package agent

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/desired"
)

// A gate on revisions holds back every change of what is applied: a chart's values and the
// decryption setting too, not only the revision and the artifact.
func TestHeldContentIncludesHelmValuesAndDecryption(t *testing.T) {
	t.Parallel()
	base := func() *desired.Assignment {
		as := app("shop", "main@1", "sha256:aa")
		as.Helm = &desired.Helm{ReleaseName: "shop", Values: map[string]any{"replicas": json.Number("2")}, IncludeCRDs: true,
			ValuesFiles: []desired.FileRef{{Source: "config", Revision: "main@1", Digest: "sha256:bb", Path: "values/prod.yaml"}}}
		return &as
	}
	tests := []struct {
		name   string
		change func(*desired.Assignment)
		same   bool
	}{
		{"nothing", func(*desired.Assignment) {}, true},
		{"self-heal (a setting)", func(as *desired.Assignment) { as.SelfHeal = false }, true},
		{"inline values", func(as *desired.Assignment) { as.Helm.Values = map[string]any{"replicas": json.Number("3")} }, false},
		{"a variable", func(as *desired.Assignment) { as.Vars = map[string]string{"env": "prod"} }, false},
		{"values file revision", func(as *desired.Assignment) {
			as.Helm.ValuesFiles[0].Revision, as.Helm.ValuesFiles[0].Digest = "main@2", "sha256:cc"
		}, false},
		{"no longer a Helm release", func(as *desired.Assignment) { as.Helm = nil }, false},
		{"decryption", func(as *desired.Assignment) { as.Decryption = "sops" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inForce, want := base(), base()
			tc.change(want)
			if got := sameContent(inForce, want); got != tc.same {
				t.Fatalf("sameContent = %t, want %t", got, tc.same)
			}
			// What a held release reconciles: the settings desired, the content in force.
			held := withContent(want, inForce)
			if !sameContent(held, inForce) {
				t.Errorf("withContent kept content that is not in force: %+v", held)
			}
			if held.SelfHeal != want.SelfHeal {
				t.Errorf("withContent dropped the desired settings")
			}
			if diff := cmp.Diff(base(), inForce); diff != "" {
				t.Errorf("withContent changed the assignment in force (-before +after):\n%s", diff)
			}
		})
	}
}

// Empty inline values are none: the wire form does not tell them apart, so an assignment in
// force read back from the state dir must not look changed against the hub's.
func TestEmptyHelmValuesAreNone(t *testing.T) {
	t.Parallel()
	none, empty := app("shop", "main@1", "sha256:aa"), app("shop", "main@1", "sha256:aa")
	none.Helm, empty.Helm = &desired.Helm{ReleaseName: "shop"}, &desired.Helm{ReleaseName: "shop", Values: map[string]any{}}
	if !sameContent(&none, &empty) {
		t.Error("sameContent tells empty inline values from none")
	}
}
