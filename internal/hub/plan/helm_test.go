package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

const (
	chartDigest     = "sha256:00000000000000000000000000000000000000000000000000000000000000c1"
	valuesDigestOld = "sha256:00000000000000000000000000000000000000000000000000000000000000d1"
	valuesDigestNew = "sha256:00000000000000000000000000000000000000000000000000000000000000d2"
)

// TestComputeHelm: a chart release is planned as the agent renders it: with its release name,
// values files from another source and values with the cluster's variables. A change of the
// values file alone (the chart's artifact unchanged) is a change of the objects.
func TestComputeHelm(t *testing.T) {
	t.Parallel()
	chart := map[string]string{
		"web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.2.3\n",
		"web/values.yaml": "replicas: 1\nregion: none\n",
		"web/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-settings, namespace: {{ .Release.Namespace }}}
data: {replicas: "{{ .Values.replicas }}", region: "{{ .Values.region }}"}
`,
	}
	fleet := func(valuesDigest string) *v1alpha1.Fleet {
		return &v1alpha1.Fleet{
			Sources: []v1alpha1.Source{{Metadata: v1alpha1.ObjectMeta{Name: "apps"}}, {Metadata: v1alpha1.ObjectMeta{Name: "config"}}},
			Releases: []v1alpha1.Release{{Metadata: v1alpha1.ObjectMeta{Name: "web"}, Spec: v1alpha1.ReleaseSpec{
				Source: "apps", Path: "web", Namespace: "shop", Targets: []v1alpha1.Target{{}},
				Helm: &v1alpha1.ReleaseHelm{ReleaseName: "shop",
					ValuesFiles: []v1alpha1.FileRef{{Source: "config", Path: "prod.yaml"}},
					Values:      map[string]any{"region": "${cluster_label_region}"}},
			}}},
		}
	}
	arts := func(valuesDigest string) map[string]schedule.Artifact {
		return map[string]schedule.Artifact{
			"apps":   {Source: "apps", Revision: "main@sha1:1", Digest: chartDigest},
			"config": {Source: "config", Revision: "main@sha1:" + valuesDigest[len(valuesDigest)-2:], Digest: valuesDigest},
		}
	}
	clusters := []schedule.Cluster{
		{Name: "eu-1", Labels: map[string]string{"region": "eu"}}, {Name: "eu-2", Labels: map[string]string{"region": "eu"}},
		{Name: "us-1", Labels: map[string]string{"region": "us"}},
	}
	current := schedule.Schedule(fleet(valuesDigestOld), clusters, arts(valuesDigestOld), nil, "r1")
	docs := map[string]desired.Document{}
	for _, c := range clusters {
		docs[c.Name] = current.Document(c.Name)
	}
	in := Input{
		Candidate: fleet(valuesDigestNew), CandidateRevision: "plan", Clusters: clusters, Current: docs,
		Artifacts: arts(valuesDigestNew),
		Dir: artifactDirs(t, map[string]map[string]string{
			chartDigest:     chart,
			valuesDigestOld: {"prod.yaml": "replicas: 2\n"},
			valuesDigestNew: {"prod.yaml": "replicas: 3\n"},
		}),
		Now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
	}
	p, err := Compute(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"web changed x2 changed:ConfigMap/shop-settings", "web changed x1 changed:ConfigMap/shop-settings"}
	if got := summary(p); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, g := range p.Groups {
		diff := g.Objects[0].Diff
		region := map[int]string{2: "eu", 1: "us"}[g.ClusterCount]
		if !strings.Contains(diff, `-  replicas: "2"`) || !strings.Contains(diff, `+  replicas: "3"`) || !strings.Contains(diff, `region: `+region) {
			t.Errorf("group of %d clusters: diff does not show replicas 2 -> 3 in region %s:\n%s", g.ClusterCount, region, diff)
		}
	}

	t.Run("a values file that is missing is the release's error", func(t *testing.T) {
		in := in
		in.Candidate = fleet(valuesDigestNew)
		in.Candidate.Releases[0].Spec.Helm.ValuesFiles[0].Path = "staging.yaml"
		p, err := Compute(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Groups) == 0 || !strings.Contains(p.Groups[0].Error, `values file "staging.yaml" of source "config" at revision main@sha1:d2: no such file in the source`) {
			t.Errorf("groups = %+v, want the missing values file named", p.Groups)
		}
	})
}
