package agentapi

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the agent endpoint's Prometheus metrics; the hub registers Collectors. Labels
// are bounded by outcomes and operations, never by cluster or release.
type Metrics struct {
	Reports         *prometheus.CounterVec // by outcome: ingested, duplicate, failed
	ReportsRefused  prometheus.Counter
	DesiredRefused  prometheus.Counter
	ArtifactBytes   prometheus.Counter
	StoreOperations *prometheus.HistogramVec // by operation
}

// NewMetrics returns the agent endpoint's metrics, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		Reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flotilla_hub_reports_total", Help: "Reports received from agents, by outcome (ingested, duplicate, failed).",
		}, []string{"outcome"}),
		ReportsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flotilla_hub_reports_refused_total", Help: "Report calls refused because a report names a release that is not in the cluster's desired state.",
		}),
		DesiredRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flotilla_hub_desired_refused_total", Help: "Desired states an agent refused (counted once per cluster and generation); the agent keeps the last one it accepted.",
		}),
		ArtifactBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flotilla_hub_artifact_bytes_served_total", Help: "Artifact bytes sent to agents.",
		}),
		StoreOperations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flotilla_hub_store_duration_seconds", Help: "Latency of store operations on the report path.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"operation"}),
	}
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Reports, m.ReportsRefused, m.DesiredRefused, m.ArtifactBytes, m.StoreOperations}
}
