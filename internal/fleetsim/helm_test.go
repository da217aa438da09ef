package fleetsim

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/render"
)

// TestFleetChartRendersPerCluster: the Helm mode's chart renders, as an agent renders it, to
// OBJECTS objects carrying the cluster's own values (its name, and the replica count of its
// label), and a new chart version changes every object.
func TestFleetChartRendersPerCluster(t *testing.T) {
	t.Parallel()
	opts := Options{Objects: 20, ObjectSize: 512}
	renderFor := func(version string, cluster int) map[string]string {
		dir := t.TempDir()
		if err := chartutil.SaveDir(fleetChart(opts, version), dir); err != nil {
			t.Fatal(err)
		}
		name := clusterName(cluster)
		vars := v1alpha1.ClusterVariables(name, helmClusterLabels(cluster))
		objs, err := render.Render(t.Context(), render.Options{Root: dir, Path: helmChartName, Vars: vars, Helm: &render.Helm{
			ReleaseName: "r-000", Namespace: "r-000",
			Values: []byte(`{"cluster": "${cluster_name}", "replicas": "${cluster_label_replicas}", "region": "${cluster_label_region}"}`),
		}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, o := range objs {
			b, err := o.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			out[o.GetKind()+"/"+o.GetName()] = string(b)
		}
		return out
	}
	one := renderFor("1.0.0", 3)
	if len(one) != opts.Objects {
		t.Fatalf("%d objects, want %d", len(one), opts.Objects)
	}
	dep := one["Deployment/r-000-"+helmChartName]
	if !strings.Contains(dep, `"replicas":4`) || !strings.Contains(dep, `"value":"sim-00003"`) {
		t.Fatalf("cluster 3's Deployment does not carry its values (replicas 4, CLUSTER sim-00003):\n%s", dep)
	}
	other := renderFor("1.0.0", 4)
	if d := other["Deployment/r-000-"+helmChartName]; !strings.Contains(d, `"replicas":5`) {
		t.Fatalf("cluster 4's Deployment, want replicas 5:\n%s", d)
	}
	next := renderFor("1.1.0", 3)
	for k, v := range one {
		if next[k] == "" || next[k] == v {
			t.Errorf("%s did not change with the chart's version", k)
		}
	}
}
