package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidateOCISource(t *testing.T) {
	t.Parallel()
	const f = "fleet/oci.yaml"
	doc := func(spec string) string {
		return "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: app}\nspec:\n  oci:\n" + spec
	}
	p := func(field, msg string) Problem { return Problem{f, "Source/app", field, msg, 0} }
	const url = "    url: oci://registry.example.com:5000/team/app-manifests\n"
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name string
		spec string
		want []Problem
	}{
		{name: "latest, no verification", spec: url},
		{name: "a tag verified by two keys", spec: url + "    tag: v1.2.0\n    verify: {cosign: {publicKeys: [release, release-2027]}}\n"},
		{name: "a semver range", spec: url + "    semver: '>=1.0.0 <2.0.0'\n"},
		{name: "a digest pin", spec: url + "    digest: " + digest + "\n"},
		{name: "credentials and insecure", spec: "    url: oci://127.0.0.1:5000/app\n    credentials: mirror\n    insecure: true\n"},
		{name: "no url", spec: "    tag: v1\n",
			want: []Problem{p("spec.oci.url", "must be set: oci://registry[:port]/repository")}},
		{name: "an https url", spec: "    url: https://registry.example.com/app\n",
			want: []Problem{p("spec.oci.url", `"https://registry.example.com/app" does not start with oci://: want oci://registry[:port]/repository`)}},
		{name: "no repository", spec: "    url: oci://registry.example.com\n",
			want: []Problem{p("spec.oci.url", `"oci://registry.example.com" names no repository: want oci://registry[:port]/repository`)}},
		{name: "no host", spec: "    url: oci:///app\n",
			want: []Problem{p("spec.oci.url", `"oci:///app" has no valid registry host: want oci://registry[:port]/repository`)}},
		{name: "credentials in the url", spec: "    url: oci://ci:s3cret@registry.example.com/app\n",
			want: []Problem{p("spec.oci.url", "must not hold credentials: name credentials the hub's operator configured with spec.oci.credentials")}},
		{name: "a tag in the url", spec: "    url: oci://registry.example.com/app:v1\n",
			want: []Problem{p("spec.oci.url", `"oci://registry.example.com/app:v1" names a tag or digest: put it in spec.oci.tag or spec.oci.digest, the url names only the repository`)}},
		{name: "an uppercase repository", spec: "    url: oci://registry.example.com/Team/App\n",
			want: []Problem{p("spec.oci.url", `repository "Team/App" is not valid: lowercase letters, digits and separators (., _, -, /)`)}},
		{name: "tag and digest", spec: url + "    tag: v1\n    digest: " + digest + "\n",
			want: []Problem{p("spec.oci", "set at most one of tag, semver and digest, not tag and digest")}},
		{name: "tag, semver and digest", spec: url + "    tag: v1\n    semver: ^1\n    digest: " + digest + "\n",
			want: []Problem{p("spec.oci", "set at most one of tag, semver and digest, not tag and semver and digest")}},
		{name: "a bad tag", spec: url + "    tag: -v1\n",
			want: []Problem{p("spec.oci.tag", `"-v1" is not a tag: letters, digits, '_', '.' and '-', at most 128, not starting with '.' or '-'`)}},
		{name: "a short digest", spec: url + "    digest: sha256:abc\n",
			want: []Problem{p("spec.oci.digest", `"sha256:abc" is not a digest: want sha256: and 64 lowercase hex digits`)}},
		{name: "a digest of another algorithm", spec: url + "    digest: md5:0123456789abcdef0123456789abcdef\n",
			want: []Problem{p("spec.oci.digest", `"md5:0123456789abcdef0123456789abcdef" is not a digest: want sha256: and 64 lowercase hex digits`)}},
		{name: "a range that does not parse", spec: url + "    semver: '>=1.0 <<2'\n",
			want: []Problem{p("spec.oci.semver", `">=1.0 <<2" is not a semver range: improper constraint: ">=1.0 <<2"`)}},
		{name: "verify without cosign", spec: url + "    verify: {}\n",
			want: []Problem{p("spec.oci.verify", "set cosign: {publicKeys: [NAME]}, or leave verify out")}},
		{name: "cosign without keys", spec: url + "    verify: {cosign: {publicKeys: []}}\n",
			want: []Problem{p("spec.oci.verify.cosign.publicKeys", "must name at least one key the hub's operator configured (flotilla hub --verify-key NAME=FILE)")}},
		{name: "a key that is a path", spec: url + "    verify: {cosign: {publicKeys: [/etc/cosign.pub]}}\n",
			want: []Problem{p("spec.oci.verify.cosign.publicKeys[0]", `"/etc/cosign.pub" is not a key name: letters, digits, '.', '_' and '-', at most 63, starting with a letter or digit`)}},
		{name: "a key listed twice", spec: url + "    verify: {cosign: {publicKeys: [release, release]}}\n",
			want: []Problem{p("spec.oci.verify.cosign.publicKeys[1]", `key "release" is already listed as publicKeys[0]`)}},
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
