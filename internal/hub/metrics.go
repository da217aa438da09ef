package hub

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the hub's Prometheus metrics, in a registry of the hub's own. Labels are bounded
// by sources and outcomes, never by cluster or object, so 10,000 clusters add no series.
type metrics struct {
	registry        *prometheus.Registry
	reports         *prometheus.CounterVec
	desiredUpdates  prometheus.Counter
	artifactBytes   prometheus.Counter
	pollDuration    *prometheus.HistogramVec
	pollErrors      *prometheus.CounterVec
	reschedule      prometheus.Histogram
	storeOperations *prometheus.HistogramVec
}

func newMetrics(h *Hub) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flotilla_hub_reports_total", Help: "Reports received from agents, by outcome (ingested, duplicate, failed).",
		}, []string{"outcome"}),
		desiredUpdates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flotilla_hub_desired_state_updates_total", Help: "Changes of a cluster's desired state (generation bumps).",
		}),
		artifactBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flotilla_hub_artifact_bytes_served_total", Help: "Artifact bytes sent to agents.",
		}),
		pollDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flotilla_hub_source_poll_duration_seconds", Help: "Time to poll a source (resolve, and pack a new revision).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 15),
		}, []string{"source"}),
		pollErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flotilla_hub_source_poll_errors_total", Help: "Failed source polls.",
		}, []string{"source"}),
		reschedule: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "flotilla_hub_reschedule_duration_seconds", Help: "Time to recompute and store every cluster's desired state.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		storeOperations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flotilla_hub_store_duration_seconds", Help: "Latency of store operations on the report path.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"operation"}),
	}
	connected := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flotilla_hub_agents_connected", Help: "Agents with an open watch stream.",
	}, func() float64 { return float64(h.watchers.count()) })
	m.registry.MustRegister(m.reports, m.desiredUpdates, m.artifactBytes, m.pollDuration, m.pollErrors,
		m.reschedule, m.storeOperations, connected,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	m.registry.MustRegister(replicaCollectors(h)...)
	return m
}

// Metrics serves the hub's metrics in the Prometheus text format.
func (h *Hub) Metrics() http.Handler {
	return promhttp.HandlerFor(h.metrics.registry, promhttp.HandlerOpts{Registry: h.metrics.registry})
}

func (m *metrics) observeStore(op string, start time.Time) {
	m.storeOperations.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

// countingWriter counts the bytes of an artifact response.
type countingWriter struct {
	http.ResponseWriter
	n *prometheus.Counter
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	(*w.n).Add(float64(n))
	return n, err
}
