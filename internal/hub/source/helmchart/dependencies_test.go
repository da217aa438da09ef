package helmchart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/registrytest"
	"github.com/flotilla/flotilla/internal/render"
)

// depFixture is a chart "app" in a repository with basic auth, depending on "lib" in a second
// repository (which itself depends on "base" there, by range only), on "common" in an OCI
// registry under an alias, and on "local", vendored in charts/ (file://).
type depFixture struct {
	main, other *chartRepo
	reg         *registrytest.Registry
	fetcher     func(Options) *Fetcher
	source      v1alpha1.Source
}

func newDepFixture(t *testing.T, mutate func(app *chart.Chart)) *depFixture {
	fx := &depFixture{main: startRepo(t, true, "deploy", "s3cret"), other: startRepo(t, true, "", "")}
	fx.reg = registrytest.Start(t, registrytest.Options{TLS: true})

	for _, v := range []string{"0.1.0", "0.1.3", "0.2.0"} {
		fx.other.add(t, newChart("base", v, 1), "")
	}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		lib := newChart("lib", v, 2, &chart.Dependency{Name: "base", Version: "~0.1.0", Repository: fx.other.URL})
		lib.Lock = nil // no lock: base's range is resolved
		fx.other.add(t, lib, "")
	}
	pushChart(t, fx.reg, "", "", "charts/common", packageChart(t, newChart("common", "2.0.0", 1)), "2.0.0")

	app := newChart("app", "1.0.0", 3,
		&chart.Dependency{Name: "lib", Version: "^1.0.0", Repository: fx.other.URL, Condition: "lib.enabled"},
		&chart.Dependency{Name: "common", Version: "2.0.0", Repository: "oci://" + fx.reg.Host + "/charts", Alias: "shared"},
		&chart.Dependency{Name: "local", Version: "0.0.1", Repository: "file://../local"},
	)
	app.Lock.Dependencies[0].Version = "1.1.0" // locked below the newest
	app.AddDependency(newChart("local", "0.0.1", 1))
	if mutate != nil {
		mutate(app)
	}
	fx.main.add(t, app, "")

	pool := testTLS(t, fx.main)
	pool.RootCAs.AppendCertsFromPEM(mustRead(t, fx.reg.CAFile))
	fx.fetcher = func(o Options) *Fetcher {
		o.TLS = pool
		o.Policy = policy(t, "username: deploy\npassword: s3cret\n", hostOf(fx.main.URL))
		return New(o)
	}
	fx.source = helmSource(fx.main.URL, "app", "1.0.0", func(h *v1alpha1.HelmSource) {
		h.Credentials = "charts"
		h.DependencyHosts = []string{hostOf(fx.other.URL), fx.reg.Host}
	})
	return fx
}

func mustRead(t testing.TB, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestDependencies: the dependencies a chart locks are fetched from their repositories (an
// https repository elsewhere, without the source's credentials, and an OCI registry) into
// charts/, their own dependencies too, vendored ones are kept, Chart.yaml is left as it is, and
// the agent renders the result as a chart whose dependencies were built.
func TestDependencies(t *testing.T) {
	t.Parallel()
	fx := newDepFixture(t, nil)
	dst := t.TempDir()
	got, err := fx.fetcher(Options{}).Fetch(t.Context(), fx.source, "", dst)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Revision, "1.0.0@sha256:") {
		t.Fatalf("revision %s", got.Revision)
	}
	want := []string{
		"Chart.lock", "Chart.yaml",
		"charts/common/Chart.yaml", "charts/common/templates/cm-0.yaml", "charts/common/values.yaml",
		"charts/lib/Chart.yaml",
		"charts/lib/charts/base/Chart.yaml", "charts/lib/charts/base/templates/cm-0.yaml", "charts/lib/charts/base/values.yaml",
		"charts/lib/templates/cm-0.yaml", "charts/lib/templates/cm-1.yaml", "charts/lib/values.yaml",
		"charts/local/Chart.yaml", "charts/local/templates/cm-0.yaml", "charts/local/values.yaml",
		"templates/cm-0.yaml", "templates/cm-1.yaml", "templates/cm-2.yaml", "values.yaml",
	}
	if diff := cmp.Diff(want, listFiles(t, dst)); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	for file, version := range map[string]string{"charts/lib/Chart.yaml": "1.1.0", "charts/lib/charts/base/Chart.yaml": "0.1.3", "charts/common/Chart.yaml": "2.0.0"} {
		if raw := mustRead(t, filepath.Join(dst, file)); !strings.Contains(string(raw), "version: "+version+"\n") {
			t.Errorf("%s:\n%s\nwant version %s", file, raw, version)
		}
	}
	if raw := string(mustRead(t, filepath.Join(dst, "Chart.yaml"))); !strings.Contains(raw, "alias: shared") || !strings.Contains(raw, "condition: lib.enabled") {
		t.Errorf("Chart.yaml lost its alias or condition:\n%s", raw)
	}
	for _, req := range fx.other.take() {
		if req.auth != "" {
			t.Errorf("the dependency's repository received credentials: %+v", req)
		}
	}

	objs, err := render.Render(t.Context(), render.Options{Root: dst, Helm: &render.Helm{ReleaseName: "r", Namespace: "apps", Values: []byte("lib: {enabled: true}\n")}})
	if err != nil {
		t.Fatalf("render the fetched chart: %v", err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	slices.Sort(names)
	wantNames := []string{"r-app-0", "r-app-1", "r-app-2", "r-base-0", "r-common-0", "r-lib-0", "r-lib-1", "r-local-0"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Fatalf("rendered objects (-want +got):\n%s", diff)
	}
}

// TestDependencyRefusals: a dependency that cannot be fetched fails the source with the chart
// and the dependency named, and leaves dst empty.
func TestDependencyRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*chart.Chart)
		opts   Options
		want   string
	}{
		{name: "file dependency not vendored", mutate: func(c *chart.Chart) { c.SetDependencies() },
			want: "dependency local (file://../local) is not in charts/: a dependency without a chart repository must be packaged with the chart (helm dependency build before helm package)"},
		{name: "a repository by local name", mutate: func(c *chart.Chart) { c.Lock.Dependencies[0].Repository = "@bitnami" },
			want: `dependency lib names repository "@bitnami", a name in someone's local Helm configuration: write the repository's URL in the chart`},
		{name: "locked version missing", mutate: func(c *chart.Chart) { c.Lock.Dependencies[0].Version = "1.9.9" },
			want: "dependency lib version 1.9.9 (repository https://"},
		{name: "too many dependencies", opts: Options{MaxDependencies: 2}, want: ": more dependencies than the limit of 2"},
		{name: "too deep", opts: Options{MaxDepth: 1}, want: "dependency base: dependencies nest deeper than the limit of 1"},
		{name: "too large together", opts: Options{MaxUnpackedBytes: 1500}, want: ": dependency lib version 1.1.0 (repository https://127.0.0.1:"}, {name: "too large together, the message", opts: Options{MaxUnpackedBytes: 1500}, want: "unpacks to more bytes than the limit allows (the chart and its dependencies together)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newDepFixture(t, tc.mutate)
			dst := t.TempDir()
			_, err := fx.fetcher(tc.opts).Fetch(t.Context(), fx.source, "", dst)
			prefix := "source 'charts': helm repository " + fx.main.URL + " chart app version 1.0.0: "
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant %s...%s", err, prefix, tc.want)
			}
			if files := listFiles(t, dst); len(files) != 0 {
				t.Fatalf("failed fetch left %v", files)
			}
		})
	}
}
