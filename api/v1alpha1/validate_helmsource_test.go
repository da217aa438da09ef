package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidateHelmSource(t *testing.T) {
	t.Parallel()
	const f = "fleet/charts.yaml"
	doc := func(spec string) string {
		return "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: podinfo}\nspec:\n  helm:\n" + spec
	}
	p := func(field, msg string) Problem { return Problem{f, "Source/podinfo", field, msg, 0} }
	const repo = "    repository: https://stefanprodan.github.io/podinfo\n"
	tests := []struct {
		name string
		spec string
		want []Problem
	}{
		{name: "newest release", spec: repo + "    chart: podinfo\n"},
		{name: "a range", spec: repo + "    chart: podinfo\n    version: '>=6.5.0 <7.0.0'\n"},
		{name: "a caret range", spec: repo + "    chart: podinfo\n    version: ^6.5\n"},
		{name: "an exact version", spec: repo + "    chart: podinfo\n    version: 6.5.4\n"},
		{name: "a pre-release range", spec: repo + "    chart: podinfo\n    version: '>=7.0.0-0'\n"},
		{name: "an oci registry path with credentials", spec: "    repository: oci://ghcr.io/stefanprodan/charts\n    chart: podinfo\n    credentials: ghcr\n"},
		{name: "an oci registry root with a port", spec: "    repository: oci://127.0.0.1:5000\n    chart: podinfo\n"},
		{name: "plain http with insecure", spec: "    repository: http://charts.internal:8080/stable\n    chart: web_app.v2\n    insecure: true\n"},
		{name: "no repository, no chart", spec: "    version: ^1\n",
			want: []Problem{
				p("spec.helm.repository", "must be set: https://... (a chart repository) or oci://registry/path"),
				p("spec.helm.chart", "must be set: the chart's name, as in the repository's index or the last component of its OCI repository"),
			}},
		{name: "plain http without insecure", spec: "    repository: http://charts.internal/stable\n    chart: web\n",
			want: []Problem{p("spec.helm.repository", `"http://charts.internal/stable" is plain HTTP: use https://, or set spec.helm.insecure: true to accept it`)}},
		{name: "another scheme", spec: "    repository: git://example.com/charts\n    chart: web\n",
			want: []Problem{p("spec.helm.repository", `"git://example.com/charts": scheme "git", want https://... (a chart repository) or oci://registry/path`)}},
		{name: "a bare path", spec: "    repository: charts/stable\n    chart: web\n",
			want: []Problem{p("spec.helm.repository", `"charts/stable": scheme "", want https://... (a chart repository) or oci://registry/path`)}},
		{name: "no host", spec: "    repository: https:///charts\n    chart: web\n",
			want: []Problem{p("spec.helm.repository", `"https:///charts" has no valid host: want https://... (a chart repository) or oci://registry/path`)}},
		{name: "credentials in the url", spec: "    repository: https://ci:s3cret@charts.example.com\n    chart: web\n",
			want: []Problem{p("spec.helm.repository", "must not hold credentials: name credentials the hub's operator configured with spec.helm.credentials")}},
		{name: "a query", spec: "    repository: https://charts.example.com/?token=x\n    chart: web\n",
			want: []Problem{p("spec.helm.repository", `"https://charts.example.com/?token=x" has a query or fragment: the repository is named by its URL alone`)}},
		{name: "an oci tag in the url", spec: "    repository: oci://ghcr.io/charts/podinfo:6.5.4\n    chart: podinfo\n",
			want: []Problem{p("spec.helm.repository", `"oci://ghcr.io/charts/podinfo:6.5.4" names a tag or digest: the repository is a registry path, spec.helm.version selects the tag`)}},
		{name: "an uppercase oci path", spec: "    repository: oci://ghcr.io/Charts\n    chart: podinfo\n",
			want: []Problem{p("spec.helm.repository", `path "Charts" is not an OCI repository path: lowercase letters, digits and separators (., _, -, /)`)}},
		{name: "a chart path", spec: repo + "    chart: stable/podinfo\n",
			want: []Problem{p("spec.helm.chart", `"stable/podinfo" is a path, not a chart name: put the path in spec.helm.repository`)}},
		{name: "a chart name with a space", spec: repo + "    chart: 'pod info'\n",
			want: []Problem{p("spec.helm.chart", `"pod info" is not a chart name: letters, digits, '.', '_' and '-', starting with a letter or digit`)}},
		{name: "a chart name starting with a dot", spec: repo + "    chart: ..\n",
			want: []Problem{p("spec.helm.chart", `".." is not a chart name: letters, digits, '.', '_' and '-', starting with a letter or digit`)}},
		{name: "an uppercase chart under oci", spec: "    repository: oci://ghcr.io/charts\n    chart: PodInfo\n",
			want: []Problem{p("spec.helm.chart", `"PodInfo" cannot name an OCI repository: lowercase letters, digits and separators (., _, -)`)}},
		{name: "a version that is not a range", spec: repo + "    chart: podinfo\n    version: latest\n",
			want: []Problem{p("spec.helm.version", `"latest" is not a semver range or version: improper constraint: "latest"`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseProblems(t, f, doc(tc.spec))
			for i := range got {
				got[i].Line = 0
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
