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
	// The queues in front of artifact downloads and joins (queue.go), by queue: artifacts,
	// joins.
	QueueWaiting    *prometheus.GaugeVec
	QueueWait       *prometheus.HistogramVec
	QueueTurnedAway *prometheus.CounterVec // and by reason: full, expired
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
		QueueWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flotilla_hub_queue_waiting", Help: "Requests waiting for a slot, by queue (artifacts: downloads; joins; reports).",
		}, []string{"queue"}),
		QueueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flotilla_hub_queue_wait_seconds", Help: "Time requests waited for a slot before being served, by queue (0 when one was free).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"queue"}),
		QueueTurnedAway: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flotilla_hub_queue_turned_away_total", Help: "Requests answered with Retry-After instead of a slot, by queue and reason (full: the queue was at its bound; expired: waited the longest a request is held).",
		}, []string{"queue", "reason"}),
	}
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Reports, m.ReportsRefused, m.DesiredRefused, m.ArtifactBytes, m.StoreOperations, m.QueueWaiting, m.QueueWait, m.QueueTurnedAway}
}
