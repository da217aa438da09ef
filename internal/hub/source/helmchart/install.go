package helmchart

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/internal/hub/source"
)

// chartName is what a chart (and so a directory under charts/) may be called.
var chartName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// install unpacks the archive of ref into dir, checks that it is the chart asked for, and
// fetches the dependencies it does not hold into dir/charts.
func (j *fetchJob) install(ctx context.Context, data []byte, ref chartRef, dir string, depth int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return j.errorf("%v", err)
	}
	if err := unpack(data, j.budget, "chart archive", dir); err != nil {
		return j.errorf("%v", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return j.errorf("the chart archive has no Chart.yaml in its top directory")
	}
	meta, err := parseMetadata(raw)
	if err != nil {
		return j.errorf("Chart.yaml: %v", err)
	}
	if meta.Name != ref.name {
		return j.errorf("the archive holds chart %q, not %s", meta.Name, ref.name)
	}
	if !sameVersion(meta.Version, ref.version) {
		return j.errorf("the archive holds version %q of the chart, not %s", meta.Version, ref.version)
	}
	deps, err := dependencies(dir, meta)
	if err != nil {
		return j.errorf("%v", err)
	}
	present, err := j.presentCharts(filepath.Join(dir, "charts"))
	if err != nil {
		return err
	}
	for _, d := range deps {
		if present[d.Name] {
			continue // vendored in the chart, or fetched for another alias of it
		}
		if err := j.fetchDependency(ctx, d, dir, depth); err != nil {
			return err
		}
		present[d.Name] = true
	}
	return nil
}

func (j *fetchJob) fetchDependency(ctx context.Context, d *chart.Dependency, dir string, depth int) error {
	if !chartName.MatchString(d.Name) {
		return j.errorf("dependency %q: not a chart name", d.Name)
	}
	repoURL := strings.TrimSpace(d.Repository)
	switch {
	case repoURL == "" || strings.HasPrefix(repoURL, "file://"):
		where := "no repository"
		if repoURL != "" {
			where = repoURL
		}
		return j.errorf("dependency %s (%s) is not in charts/: a dependency without a chart repository must be packaged with the chart (helm dependency build before helm package)", d.Name, where)
	case strings.HasPrefix(repoURL, "@") || strings.HasPrefix(repoURL, "alias:"):
		return j.errorf("dependency %s names repository %q, a name in someone's local Helm configuration: write the repository's URL in the chart", d.Name, repoURL)
	}
	if err := j.dependencyHostAllowed(d.Name, repoURL); err != nil {
		return err
	}
	if depth+1 > j.f.opts.MaxDepth {
		return j.errorf("dependency %s: dependencies nest deeper than the limit of %d", d.Name, j.f.opts.MaxDepth)
	}
	if j.budget.deps--; j.budget.deps < 0 {
		return j.errorf("dependency %s: more dependencies than the limit of %d", d.Name, j.f.opts.MaxDependencies)
	}
	child := &fetchJob{
		f: j.f, source: j.source, chart: d.Name, version: d.Version, repository: repoURL,
		credentials: j.credentials, insecure: j.insecure, budget: j.budget, parent: j,
		dependencyHosts: j.dependencyHosts,
	}
	repo, err := child.openRepository(ctx, repoURL, j.credentials, false)
	if err != nil {
		return err
	}
	ref, err := repo.resolve(ctx, d.Name, d.Version)
	if err != nil {
		return err
	}
	child.resolved = ref.version
	data, err := repo.download(ctx, ref)
	if err != nil {
		return err
	}
	return child.install(ctx, data, ref, filepath.Join(dir, "charts", d.Name), depth+1)
}

// dependencyHostAllowed refuses, before anything contacts it, a dependency repository on a
// host the source does not allow: the source repository's own host (and port), or one of its
// spec.helm.dependencyHosts. A chart is written by whoever publishes it; without this, its
// Chart.lock could have the hub request any URL (the cloud metadata address, a service
// inside the hub's network) in the platform's name.
func (j *fetchJob) dependencyHostAllowed(name, raw string) error {
	u, err := parseRepository(raw)
	if err != nil {
		return j.errorf("dependency repository %s: %v", source.Redact(raw), err)
	}
	root := j
	for root.parent != nil {
		root = root.parent
	}
	own, err := parseRepository(root.repository)
	if err == nil && strings.EqualFold(u.Host, own.Host) {
		return nil
	}
	if source.HostAllowed(u, j.dependencyHosts) {
		return nil
	}
	allowed := "no host"
	if err == nil {
		allowed = "its own host " + strings.ToLower(own.Host)
	}
	if len(j.dependencyHosts) > 0 {
		allowed += " and " + strings.Join(j.dependencyHosts, ", ")
	}
	return j.errorf("dependency %s: repository %s is on host %s, and the source allows dependencies from %s only (spec.helm.dependencyHosts)", name, source.Redact(raw), strings.ToLower(u.Host), allowed)
}

// presentCharts are the charts in a chart's charts/ directory, by name: subdirectories with a
// Chart.yaml and chart archives (.tgz), which are checked as the chart's own archive was and
// count towards the same limits.
func (j *fetchJob) presentCharts(dir string) (map[string]bool, error) {
	present := map[string]bool{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return present, nil
	}
	if err != nil {
		return nil, j.errorf("%v", err)
	}
	for _, e := range entries {
		var raw []byte
		switch {
		case e.IsDir():
			raw, err = os.ReadFile(filepath.Join(dir, e.Name(), "Chart.yaml"))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
		case strings.HasSuffix(e.Name(), ".tgz"):
			var data []byte
			if data, err = os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				raw, err = chartYAMLOf(data, j.budget, "charts/"+e.Name())
			}
		default:
			continue
		}
		if err != nil {
			return nil, j.errorf("%v", err)
		}
		meta, err := parseMetadata(raw)
		if err != nil {
			return nil, j.errorf("charts/%s: Chart.yaml: %v", e.Name(), err)
		}
		present[meta.Name] = true
	}
	return present, nil
}

// dependencies are the chart's locked dependencies: Chart.lock's (requirements.lock's for an
// apiVersion v1 chart), or, without a lock, the ranges Chart.yaml (requirements.yaml) states.
func dependencies(dir string, meta *chart.Metadata) ([]*chart.Dependency, error) {
	for _, lockFile := range []string{"Chart.lock", "requirements.lock"} {
		raw, err := os.ReadFile(filepath.Join(dir, lockFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var lock chart.Lock
		if err := yaml.Unmarshal(raw, &lock); err != nil {
			return nil, fmt.Errorf("%s: %v", lockFile, err)
		}
		return nonNil(lock.Dependencies), nil
	}
	if len(meta.Dependencies) > 0 {
		return nonNil(meta.Dependencies), nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, "requirements.yaml"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var req struct {
		Dependencies []*chart.Dependency `json:"dependencies"`
	}
	if err := yaml.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("requirements.yaml: %v", err)
	}
	return nonNil(req.Dependencies), nil
}

func nonNil(deps []*chart.Dependency) []*chart.Dependency {
	out := deps[:0:0]
	for _, d := range deps {
		if d != nil {
			out = append(out, d)
		}
	}
	return out
}

func parseMetadata(raw []byte) (*chart.Metadata, error) {
	var meta chart.Metadata
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		return nil, err
	}
	if meta.Name == "" {
		return nil, errors.New("no name")
	}
	return &meta, nil
}

// sameVersion compares versions as semver (an OCI tag's "_" is semver's "+").
func sameVersion(a, b string) bool {
	va, err1 := semver.NewVersion(a)
	vb, err2 := semver.NewVersion(strings.ReplaceAll(b, "_", "+"))
	if err1 != nil || err2 != nil {
		return a == b
	}
	return va.Equal(vb) && va.Metadata() == vb.Metadata()
}
