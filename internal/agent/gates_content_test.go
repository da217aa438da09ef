package agent

import (
	"testing"

	"google.golang.org/protobuf/proto"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// A gate on revisions holds back every change of what is applied: a chart's values and the
// decryption setting too, not only the revision and the artifact.
func TestHeldContentIncludesHelmValuesAndDecryption(t *testing.T) {
	base := func() *agentv1.Assignment {
		as := app("shop", "main@1", "sha256:aa")
		as.Helm = &agentv1.HelmRelease{ReleaseName: "shop", ValuesJson: []byte(`{"replicas":2}`), IncludeCrds: true,
			ValuesFiles: []*agentv1.FileRef{{Source: "config", Revision: "main@1", Digest: "sha256:bb", Path: "values/prod.yaml"}}}
		return as
	}
	tests := []struct {
		name   string
		change func(*agentv1.Assignment)
		same   bool
	}{
		{"nothing", func(*agentv1.Assignment) {}, true},
		{"self-heal (a setting)", func(as *agentv1.Assignment) { as.SelfHeal = false }, true},
		{"inline values", func(as *agentv1.Assignment) { as.Helm.ValuesJson = []byte(`{"replicas":3}`) }, false},
		{"values file revision", func(as *agentv1.Assignment) {
			as.Helm.ValuesFiles[0].Revision, as.Helm.ValuesFiles[0].Digest = "main@2", "sha256:cc"
		}, false},
		{"no longer a Helm release", func(as *agentv1.Assignment) { as.Helm = nil }, false},
		{"decryption", func(as *agentv1.Assignment) { as.Decryption = "sops" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inForce, desired := base(), base()
			tc.change(desired)
			if got := sameContent(inForce, desired); got != tc.same {
				t.Fatalf("sameContent = %t, want %t", got, tc.same)
			}
			// What a held release reconciles: the settings desired, the content in force.
			held := withContent(desired, inForce)
			if !sameContent(held, inForce) {
				t.Errorf("withContent kept content that is not in force: %v", held)
			}
			if held.SelfHeal != desired.SelfHeal {
				t.Errorf("withContent dropped the desired settings")
			}
			if held.Helm != nil && held.Helm == inForce.Helm {
				t.Errorf("withContent shares the Helm settings with the assignment in force instead of copying them")
			}
			if !proto.Equal(inForce, base()) {
				t.Errorf("withContent changed the assignment in force")
			}
		})
	}
}
