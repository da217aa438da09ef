package v1alpha1

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestValidateDelivery(t *testing.T) {
	t.Parallel()
	const f = "fleet/releases.yaml"
	long := strings.Repeat("a", MaxHelmReleaseNameLength+1)
	tests := []struct {
		name, doc string
		want      []Problem
	}{
		{"long release name without releaseName", release(long, validSpec+"  helm: {}\n"),
			[]Problem{{f, "Release/" + long, "spec.helm.releaseName", fmt.Sprintf("must be set: the release name %q is longer than the 53 characters Helm allows a release name", long), 0}}},
		{"long release name with releaseName", release(long, validSpec+"  helm: {releaseName: shop}\n"), nil},
		{"values file in an undefined source", release("shop", validSpec+"  helm:\n    valuesFiles: [{source: nowhere, path: v.yaml}]\n"),
			[]Problem{{f, "Release/shop", "spec.helm.valuesFiles[0].source", `source "nowhere" is not defined`, 0}}},
		{"patch in an undefined source", release("shop", validSpec+"  helm:\n    postRender:\n      patches: [{source: nowhere, path: p.yaml, target: {kind: Deployment}}]\n"),
			[]Problem{{f, "Release/shop", "spec.helm.postRender.patches[0].source", `source "nowhere" is not defined`, 0}}},
		{"unknown decryption provider", release("shop", validSpec+"  decryption: {provider: vault}\n"),
			[]Problem{{f, "Release/shop", "spec.decryption.provider", `must be "sops", not "vault"`, 0}}},
		{"sops", release("shop", validSpec+"  decryption: {provider: sops}\n"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseProblems(t, f, tc.doc)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Problem{}, "Line"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
