package schedule

import (
	"fmt"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// BenchmarkSchedule plans a fleet of 1,000 clusters and 20 releases: half with a templated
// path, selectors from "every cluster" to one region of one environment.
func BenchmarkSchedule(b *testing.B) {
	envs := []string{"production", "staging", "dev"}
	regions := []string{"eu", "us", "ap", "sa"}
	clusters := make([]Cluster, 1000)
	for i := range clusters {
		clusters[i] = cluster(fmt.Sprintf("cluster-%04d", i),
			"env", envs[i%len(envs)], "region", regions[i%len(regions)], "tier", fmt.Sprint(i%3),
			"topology.kubernetes.io/zone", regions[i%len(regions)]+"-1a")
	}
	releases := make([]v1alpha1.Release, 20)
	for i := range releases {
		var r v1alpha1.Release
		switch i % 4 {
		case 0:
			r = release(fmt.Sprintf("r%02d", i), target())
		case 1:
			r = release(fmt.Sprintf("r%02d", i), target("env", envs[i%len(envs)]))
		case 2:
			r = release(fmt.Sprintf("r%02d", i), target("env", "production", "region", regions[i%len(regions)]), target("tier", "0"))
		case 3:
			r = release(fmt.Sprintf("r%02d", i), target("region", regions[i%len(regions)]))
		}
		if i%2 == 0 {
			r.Spec.Path = "clusters/{{ .Cluster.Labels.region }}/" + r.Metadata.Name
		}
		r.Spec.Variables = map[string]string{"replicas": "3", "log_level": "info"}
		releases[i] = r
	}
	f := fleet(releases...)
	previous := documents(Schedule(f, clusters, artifacts, nil, "r1"))

	b.ReportAllocs()
	var n int
	for b.Loop() {
		p := Schedule(f, clusters, artifacts, previous, "r1")
		n = 0
		for _, as := range p.Assignments {
			n += len(as)
		}
	}
	b.ReportMetric(float64(n), "assignments/op")
}
