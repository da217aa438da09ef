package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/agentapi/agentapitest"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/audit"
)

// TestHelmChartSource: a Source.spec.helm with named credentials is fetched by the hub from a
// chart repository; the source shows revision "<version>@sha256:<archive digest>", the audit
// trail records it, and the cluster's assignment carries the chart's artifact, whose root is
// the chart directory.
func TestHelmChartSource(t *testing.T) {
	t.Parallel()
	archives := map[string][]byte{}
	index := repo.NewIndexFile()
	for _, v := range []string{"1.0.0", "1.3.0", "2.0.0"} {
		c := &chart.Chart{
			Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "web", Version: v},
			Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {replicas: {{ .Values.replicas | quote }}}\n")}},
			Raw:       []*chart.File{{Name: "values.yaml", Data: []byte("replicas: 1\n")}},
		}
		file, err := chartutil.Save(c, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if archives[v], err = os.ReadFile(file); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(archives[v])
		if err := index.MustAdd(c.Metadata, "web-"+v+".tgz", "", hex.EncodeToString(sum[:])); err != nil {
			t.Fatal(err)
		}
	}
	indexYAML, err := yaml.Marshal(index)
	if err != nil {
		t.Fatal(err)
	}
	charts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "deploy" || p != "s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/index.yaml" {
			_, _ = w.Write(indexYAML) // an HTTP response: a failed write has nobody to tell
			return
		}
		for v, data := range archives {
			if r.URL.Path == "/web-"+v+".tgz" {
				_, _ = w.Write(data) // an HTTP response: a failed write has nobody to tell
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(charts.Close)

	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "charts.creds"), []byte("username: deploy\npassword: s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(cfgDir, "credentials.yaml")
	if err := os.WriteFile(cfg, []byte("credentials:\n  charts: {file: charts.creds, hosts: [127.0.0.1]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fleetDir := t.TempDir()
	fleet := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: web-chart}
spec:
  helm: {repository: %q, chart: web, version: ^1, credentials: charts, insecure: true}
  interval: 1m
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: web-chart
  namespace: web
  targets: [{selector: {matchLabels: {env: prod}}}]
  helm:
    values: {replicas: 3}
`, charts.URL)
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	th := startHub(t, fleetDir, func(o *Options) { o.CredentialsConfig = cfg })
	a := th.addAgent(t, "edge", map[string]string{"env": "prod"})

	sum := sha256.Sum256(archives["1.3.0"])
	wantRevision := "1.3.0@sha256:" + hex.EncodeToString(sum[:])
	as := agentapitest.WaitAssignment(t, a.client)
	if as.GetRelease() != "web" || as.GetRevision() != wantRevision || as.GetHelm().GetReleaseName() != "web" {
		t.Fatalf("assignment %s at %s (helm %v), want web at %s", as.GetRelease(), as.GetRevision(), as.GetHelm(), wantRevision)
	}
	sources, err := th.api.Sources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) != 1 || sources[0].Revision != wantRevision || sources[0].Digest != as.GetDigest() || sources[0].Error != "" || sources[0].URL != charts.URL+" chart web" {
		t.Fatalf("sources %+v, want web-chart at %s, digest %s", sources, wantRevision, as.GetDigest())
	}

	// The artifact is the chart directory: what the agent renders.
	f, err := th.artifacts.Open(as.GetDigest())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	if err := artifact.Unpack(t.Context(), f, dir, artifact.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	var files []string
	if err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	if want := []string{"Chart.yaml", "templates/cm.yaml", "values.yaml"}; !slices.Equal(files, want) {
		t.Fatalf("artifact files %v, want %v", files, want)
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, "Chart.yaml")); !strings.Contains(string(raw), "version: 1.3.0") {
		t.Fatalf("artifact Chart.yaml:\n%s", raw)
	}
	recs, err := th.audit.List(t.Context(), audit.Filter{Action: "source.revision"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Detail["revision"] != wantRevision || recs[0].Detail["url"] != charts.URL+" chart web" {
		t.Fatalf("source.revision audit records %+v", recs)
	}
}
