package v1alpha1

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidateReleaseHelm(t *testing.T) {
	t.Parallel()
	const f = "fleet/releases.yaml"
	doc := func(helm string) string {
		return release("shop", validSpec+"  path: charts/shop\n  helm:\n"+helm)
	}
	p := func(field, msg string) Problem { return Problem{f, "Release/shop", field, msg, 0} }
	bigValues := "    values:\n      blob: " + strings.Repeat("x", MaxInlineValuesBytes) + "\n"
	bigPatch := "    postRender:\n      patches:\n        - target: {kind: Deployment}\n          patch: |\n            - {op: add, path: /x, value: " + strings.Repeat("y", MaxInlinePatchBytes) + "}\n"
	tests := []struct {
		name string
		helm string
		want []Problem
	}{
		{name: "everything set", helm: `    releaseName: shop-eu
    valuesFiles:
      - path: values/common.yaml
      - source: platform
        path: values/eu.yaml
    values:
      replicaCount: 3
      host: ${cluster_name}.shop.example.com
    includeCRDs: false
    postRender:
      patches:
        - patch: |
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: shop}
            spec: {replicas: 2}
        - target: {kind: Deployment, name: 'shop-.*', labelSelector: 'app in (shop,cart)'}
          patch: |
            - op: add
              path: /metadata/annotations/team
              value: payments
        - path: patches/pdb.yaml
          source: platform
          target: {group: policy, kind: PodDisruptionBudget, annotationSelector: 'tier=web'}
`},
		{name: "defaults", helm: "    includeCRDs: true\n"},
		{name: "release name with upper case", helm: "    releaseName: Shop\n",
			want: []Problem{p("spec.helm.releaseName", `"Shop" is not a valid release name: lowercase letters, digits and '-', starting and ending with a letter or digit`)}},
		{name: "release name with a dot", helm: "    releaseName: shop.eu\n",
			want: []Problem{p("spec.helm.releaseName", `"shop.eu" is not a valid release name: lowercase letters, digits and '-', starting and ending with a letter or digit`)}},
		{name: "release name ending in a dash", helm: "    releaseName: shop-\n",
			want: []Problem{p("spec.helm.releaseName", `"shop-" is not a valid release name: lowercase letters, digits and '-', starting and ending with a letter or digit`)}},
		{name: "release name of 53 characters", helm: "    releaseName: " + strings.Repeat("a", 53) + "\n"},
		{name: "release name of 54 characters", helm: "    releaseName: " + strings.Repeat("a", 54) + "\n",
			want: []Problem{p("spec.helm.releaseName", fmt.Sprintf("%q is 54 characters: Helm allows at most 53", strings.Repeat("a", 54)))}},
		{name: "values file paths", helm: `    valuesFiles:
      - path: /etc/values.yaml
      - path: ../other/values.yaml
      - path: values/
      - path: 'values/{{ .Cluster.Name }}.yaml'
      - source: platform
`,
			want: []Problem{
				p("spec.helm.valuesFiles[0].path", `path "/etc/values.yaml" must be relative to the root of the source`),
				p("spec.helm.valuesFiles[1].path", `path "../other/values.yaml" must not contain ".."`),
				p("spec.helm.valuesFiles[2].path", `path "values/" names a directory: name a file`),
				p("spec.helm.valuesFiles[3].path", `path "values/{{ .Cluster.Name }}.yaml" is a template: file paths are read as written`),
				p("spec.helm.valuesFiles[4].path", "must be set: the file's path in the source"),
			}},
		{name: "values file in an undefined source", helm: "    valuesFiles: [{source: nowhere, path: v.yaml}]\n",
			want: []Problem{p("spec.helm.valuesFiles[0].source", `source "nowhere" is not defined`)}},
		{name: "values too large", helm: bigValues,
			want: []Problem{p("spec.helm.values", fmt.Sprintf("is %d bytes as JSON: at most %d inline; put larger values in a file and name it in spec.helm.valuesFiles", MaxInlineValuesBytes+11, MaxInlineValuesBytes))}},
		{name: "no patches", helm: "    postRender: {patches: []}\n",
			want: []Problem{p("spec.helm.postRender.patches", "must list at least one patch (or leave postRender out)")}},
		{name: "patch and path", helm: "    postRender:\n      patches:\n        - {patch: 'kind: X', path: p.yaml}\n        - {target: {kind: X}}\n",
			want: []Problem{
				p("spec.helm.postRender.patches[0]", "set patch or path, not both"),
				p("spec.helm.postRender.patches[1]", "set patch (inline) or path (a file in a source)"),
			}},
		{name: "source of an inline patch", helm: "    postRender:\n      patches:\n        - source: platform\n          patch: '{kind: Deployment, metadata: {name: x}}'\n",
			want: []Problem{p("spec.helm.postRender.patches[0].source", "applies to path only: an inline patch has no source")}},
		{name: "patch path outside", helm: "    postRender:\n      patches:\n        - path: ../p.yaml\n",
			want: []Problem{p("spec.helm.postRender.patches[0].path", `path "../p.yaml" must not contain ".."`)}},
		{name: "patch that is not YAML", helm: "    postRender:\n      patches:\n        - patch: 'a: [b'\n",
			want: []Problem{p("spec.helm.postRender.patches[0].patch", "is not YAML: yaml: line 1: did not find expected ',' or ']'")}},
		{name: "patch that is a scalar", helm: "    postRender:\n      patches:\n        - patch: just text\n",
			want: []Problem{p("spec.helm.postRender.patches[0].patch", "want a strategic merge patch (an object) or a JSON 6902 patch (a list of operations)")}},
		{name: "JSON 6902 patch without a target", helm: "    postRender:\n      patches:\n        - patch: '[{op: remove, path: /spec/replicas}]'\n",
			want: []Problem{p("spec.helm.postRender.patches[0].patch", "is a JSON 6902 patch (a list of operations): set target to say which objects it patches")}},
		{name: "JSON 6902 bad operations", helm: "    postRender:\n      patches:\n        - target: {kind: Deployment}\n          patch: '[{op: delete, path: /spec}, {value: 1}]'\n",
			want: []Problem{
				p("spec.helm.postRender.patches[0].patch[0].op", `"delete" is not a JSON 6902 operation: add, remove, replace, move, copy or test`),
				p("spec.helm.postRender.patches[0].patch[1]", "want a JSON 6902 operation: {op: add|remove|replace|move|copy|test, path: /...}"),
			}},
		{name: "strategic merge patch naming nothing", helm: "    postRender:\n      patches:\n        - patch: '{spec: {replicas: 1}}'\n",
			want: []Problem{p("spec.helm.postRender.patches[0].patch", "is a strategic merge patch without kind and metadata.name: name the object it patches, or set target")}},
		{name: "two documents", helm: "    postRender:\n      patches:\n        - patch: \"kind: A\\nmetadata: {name: a}\\n---\\nkind: B\\n\"\n",
			want: []Problem{p("spec.helm.postRender.patches[0].patch", "holds more than one YAML document: one patch per entry")}},
		{name: "inline patch too large", helm: bigPatch,
			want: []Problem{p("spec.helm.postRender.patches[0].patch", fmt.Sprintf("is %d bytes: at most %d inline; put it in a file and name it with path", MaxInlinePatchBytes+31, MaxInlinePatchBytes))}},
		{name: "targets", helm: `    postRender:
      patches:
        - path: p.yaml
          target: {}
        - path: p.yaml
          target: {kind: 'Deploy(ment', name: '*x'}
        - path: p.yaml
          target: {labelSelector: 'app in (a', annotationSelector: '!!'}
`,
			want: []Problem{
				p("spec.helm.postRender.patches[0].target", "is empty: it would select every object; leave it out of a strategic merge patch that names its object, or set kind, name, ..."),
				p("spec.helm.postRender.patches[1].target.kind", "\"Deploy(ment\" is not a regular expression: error parsing regexp: missing closing ): `^(?:Deploy(ment)$`"),
				p("spec.helm.postRender.patches[1].target.name", "\"*x\" is not a regular expression: error parsing regexp: missing argument to repetition operator: `*`"),
				p("spec.helm.postRender.patches[2].target.labelSelector", `"app in (a" is not a selector: unable to parse requirement: found '', expected: ',' or ')'`),
				p("spec.helm.postRender.patches[2].target.annotationSelector", `"!!" is not a selector: unable to parse requirement: found '!', expected: identifier`),
			}},
		{name: "patch file in an undefined source", helm: "    postRender:\n      patches:\n        - {path: p.yaml, source: elsewhere}\n",
			want: []Problem{p("spec.helm.postRender.patches[0].source", `source "elsewhere" is not defined`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseProblems(t, f, doc(tc.helm))
			for i := range got {
				got[i].Line = 0
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
