package render

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// isChartDir reports whether dir is a Helm chart: it holds Chart.yaml.
func isChartDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "Chart.yaml"))
	return err == nil && st.Mode().IsRegular()
}

// DefaultReleaseName is .Release.Name when Helm.ReleaseName is empty, as `helm template`'s.
const DefaultReleaseName = "release-name"

// renderChart renders the chart in dir (rel inside root) as `helm template NAME DIR
// --namespace NS --include-crds --skip-tests -f ... --set ... --kube-version ...
// --api-versions ...` would, object for object, with Helm's own install action in its
// client-only mode (the code path of `helm template`), then applies the post-render patches.
//
// The output is the chart's CRDs (when IncludeCRDs), then its manifests in Helm's install
// order, then its hooks (pre-* before post-*, each by weight then name), with their helm.sh/hook
// annotations: the reconciler stages them. Test hooks are dropped, as --skip-tests does.
func renderChart(ctx context.Context, root, rel, dir string, opts Options, vars map[string]string) ([]object, error) {
	h := Helm{}
	if opts.Helm != nil {
		h = *opts.Helm
	}
	if h.ReleaseName == "" {
		h.ReleaseName = DefaultReleaseName
	}
	if h.Namespace == "" {
		h.Namespace = "default"
	}
	lim := h.limits()

	files, err := loadChartFiles(ctx, root, rel, dir, lim)
	if err != nil {
		return nil, err
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, &Error{File: joinRel(rel, "Chart.yaml"), Err: fmt.Errorf("load chart: %w", err)}
	}
	sortDependencies(ch)
	// From here on, errors name the chart as users know it: by name and version.
	fail := func(err error) error {
		return &Error{File: rel, Err: fmt.Errorf("chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)}
	}
	switch ch.Metadata.Type {
	case "", "application":
	default:
		return nil, fail(fmt.Errorf("%s charts are not installable", ch.Metadata.Type))
	}
	if err := checkDependencies(ch); err != nil {
		return nil, fail(err)
	}
	vals, err := chartValues(h, vars, lim)
	if err != nil {
		return nil, err
	}
	var kubeVersion *chartutil.KubeVersion
	if h.KubeVersion != "" {
		if kubeVersion, err = chartutil.ParseKubeVersion(h.KubeVersion); err != nil {
			return nil, &Error{File: rel, Err: fmt.Errorf("kube version %q: %w", h.KubeVersion, err)}
		}
	}

	rls, err := runInstall(ctx, ch, vals, h, kubeVersion)
	if err != nil {
		return nil, fail(err)
	}
	size := int64(len(rls.Manifest))
	for _, hk := range rls.Hooks {
		size += int64(len(hk.Manifest))
	}
	if size > lim.outputBytes {
		return nil, fail(fmt.Errorf("rendered output is %d bytes, more than the %d allowed", size, lim.outputBytes))
	}
	out := chartOutput{rel: rel, chart: ch.Name()}
	objs, err := out.manifestObjects(rls.Manifest)
	if err != nil {
		return nil, err
	}
	if len(h.PostRender) > 0 {
		if objs, err = postRender(ctx, rel, objs, h.PostRender); err != nil {
			return nil, err
		}
	}
	hooks, err := out.hookObjects(rls.Hooks)
	if err != nil {
		return nil, err
	}
	return append(objs, hooks...), nil
}

// joinRel joins a path inside the chart to the chart's directory relative to the root.
func joinRel(rel, name string) string {
	if rel == "." || rel == "" {
		return name
	}
	return rel + "/" + name
}

// sortDependencies orders each chart's subcharts by name and version: Helm's loader collects
// them from a map, so its order (which decides the order of the subcharts' CRDs) changes from
// one run to the next, and the agent must render the same bytes on every reconcile.
func sortDependencies(ch *chart.Chart) {
	deps := slices.Clone(ch.Dependencies())
	slices.SortStableFunc(deps, func(a, b *chart.Chart) int {
		return cmp.Or(strings.Compare(a.Name(), b.Name()), strings.Compare(a.Metadata.Version, b.Metadata.Version))
	})
	ch.SetDependencies(deps...)
	for _, d := range deps {
		sortDependencies(d)
	}
}

// checkDependencies requires every dependency that Chart.yaml (or requirements.yaml) and
// Chart.lock name to be in charts/, in the chart and in its subcharts: the agent never
// downloads a chart. Helm's own check (action.CheckDependencies) only looks at the top chart's
// Chart.yaml.
func checkDependencies(ch *chart.Chart) error {
	var missing []string
	var walk func(c *chart.Chart, prefix string)
	walk = func(c *chart.Chart, prefix string) {
		have := map[string]bool{}
		for _, d := range c.Dependencies() {
			have[d.Name()] = true
		}
		seen := map[string]bool{}
		note := func(name, from string) {
			if name == "" || have[name] || seen[name] {
				return
			}
			seen[name] = true
			missing = append(missing, fmt.Sprintf("%s%s (%s)", prefix, name, from))
		}
		for _, d := range c.Metadata.Dependencies {
			note(d.Name, "Chart.yaml")
		}
		if c.Lock != nil {
			for _, d := range c.Lock.Dependencies {
				note(d.Name, "Chart.lock")
			}
		}
		for _, d := range c.Dependencies() {
			walk(d, prefix+d.Name()+"/charts/")
		}
	}
	walk(ch, "charts/")
	if len(missing) > 0 {
		return fmt.Errorf("dependencies missing: %s; the agent never downloads charts: vendor them into charts/ (helm dependency build) or use a Helm source, whose hub fetches them", strings.Join(missing, ", "))
	}
	return nil
}

// runInstall renders the chart as `helm template` does (templateRelease), bounded by ctx.
//
// Helm's template engine takes no context, so the render runs in its own goroutine and
// renderChart returns when ctx ends; the goroutine finishes its template on its own (Go
// templates always terminate: Helm bounds include's recursion, range needs a finite list).
// helmSlots bounds how many renders may run at once, abandoned ones included, so a chart that
// outlives every reconcile's deadline occupies one slot and not one goroutine per reconcile.
func runInstall(ctx context.Context, ch *chart.Chart, vals map[string]any, h Helm, kubeVersion *chartutil.KubeVersion) (*release.Release, error) {
	select {
	case helmSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for earlier chart renders to finish: %w", ctx.Err())
	}
	type result struct {
		rls *release.Release
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-helmSlots }()
		defer func() {
			// A template function that panics must fail this chart, not the agent.
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("helm panicked: %v", p)}
			}
		}()
		if h.started != nil {
			h.started()
		}
		rls, err := templateRelease(ch, vals, h, kubeVersion)
		done <- result{rls, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		if r.rls == nil {
			return nil, errors.New("helm returned no release")
		}
		return r.rls, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("rendering stopped: %w", ctx.Err())
	}
}

// templateRelease renders a chart as Helm's install action does in `helm template`'s mode (a
// client-only dry run), with Helm's chart, engine and release packages alone: the action
// package would link Helm's registry, storage and SQL drivers into the agent for nothing.
// The steps are the action's: the release name checked, dependencies' conditions, tags and
// imported values applied, the values checked against the chart's schema, .Capabilities
// Helm's defaults plus what h gives (no cluster: lookup returns nothing), .Release.IsInstall
// true, the chart's kubeVersion constraint checked, NOTES dropped, the manifests sorted in
// install order after the CRDs (when IncludeCRDs), each headed by its source, and the hooks
// split off. The parity tests hold it to the helm CLI's output.
func templateRelease(ch *chart.Chart, vals map[string]any, h Helm, kubeVersion *chartutil.KubeVersion) (*release.Release, error) {
	if err := chartutil.ValidateReleaseName(h.ReleaseName); err != nil {
		return nil, fmt.Errorf("release name %q: %w", h.ReleaseName, err)
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if kubeVersion != nil {
		caps.KubeVersion = *kubeVersion
	}
	caps.APIVersions = append(caps.APIVersions, h.APIVersions...)
	options := chartutil.ReleaseOptions{Name: h.ReleaseName, Namespace: h.Namespace, Revision: 1, IsInstall: true}
	values, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, options, caps, false)
	if err != nil {
		return nil, err
	}
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	var e engine.Engine
	files, err := e.Render(ch, values)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if h.IncludeCRDs {
		for _, crd := range ch.CRDObjects() {
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", crd.Filename, crd.File.Data)
		}
	}
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return &release.Release{Name: h.ReleaseName, Namespace: h.Namespace, Chart: ch, Manifest: b.String(), Hooks: hooks}, nil
}

// helmSlots is the number of chart renders that may run at once in the process (see
// runInstall). It is process-wide on purpose: what it protects (CPU and memory held by renders
// nobody waits for any more) is.
var helmSlots = make(chan struct{}, 4)
