package agent

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Metrics are the agent's Prometheus metrics, in a registry of their own (no process-wide
// state). Labels are bounded: at most the releases assigned to this cluster, never objects.
type Metrics struct {
	registry   *prometheus.Registry
	duration   *prometheus.HistogramVec
	reconciles *prometheus.CounterVec
	objects    *prometheus.GaugeVec
	drifted    *prometheus.GaugeVec
	outbox     prometheus.Gauge
	connected  prometheus.Gauge
	generation prometheus.Gauge
	refusedGen prometheus.Gauge
	refusals   prometheus.Counter
	// reportsRefused counts reports the hub refused as invalid: dropped from the outbox.
	reportsRefused prometheus.Counter
}

// NewMetrics creates the agent's metrics with Go and process collectors beside them.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flotilla_agent_reconcile_duration_seconds", Help: "Time to reconcile one assignment (render, apply, prune, wait).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 15),
		}, []string{"release"}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flotilla_agent_reconciles_total", Help: "Reconciles by release and resulting phase.",
		}, []string{"release", "phase"}),
		objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flotilla_agent_objects", Help: "Objects in the release's last reconciled set.",
		}, []string{"release"}),
		drifted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flotilla_agent_drifted_objects", Help: "Objects found drifted at the release's last reconcile (healed or not).",
		}, []string{"release"}),
		outbox: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "flotilla_agent_outbox_depth", Help: "Reports waiting in the outbox for the hub's ack.",
		}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "flotilla_agent_hub_connected", Help: "1 while the watch stream to the hub is open.",
		}),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "flotilla_agent_desired_generation", Help: "Generation of the desired state the agent has.",
		}),
		refusedGen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "flotilla_agent_desired_refused_generation",
			Help: "Generation of the hub's desired state the agent refuses (it drops a release without a tombstone); 0 when it refuses none.",
		}),
		refusals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flotilla_agent_desired_refused_total", Help: "Desired states refused because they drop a release without a tombstone (each generation once).",
		}),
		reportsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flotilla_agent_reports_refused_total", Help: "Reports the hub refused as invalid (a release not in the cluster's desired state, an oversized report); dropped from the outbox and logged.",
		}),
	}
	m.registry.MustRegister(m.duration, m.reconciles, m.objects, m.drifted, m.outbox, m.connected, m.generation, m.refusedGen, m.refusals, m.reportsRefused,
		// The deprecated constructors, not prometheus/collectors': that package also
		// holds the database/sql collector and links database/sql into the agent, which
		// cmd/flotilla-agent's dependency test refuses (the agent has no SQL).
		prometheus.NewGoCollector(),                                       //nolint:staticcheck // see above
		prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{})) //nolint:staticcheck // see above
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// observeStatus records one reconcile. A nil *Metrics records nothing.
func (m *Metrics) observeStatus(st *agentv1.AssignmentStatus) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(st.Release).Observe(st.DurationSeconds)
	m.reconciles.WithLabelValues(st.Release, st.Phase).Inc()
	m.objects.WithLabelValues(st.Release).Set(float64(st.Objects))
	m.drifted.WithLabelValues(st.Release).Set(float64(len(st.Drift)))
}

// forget drops a release's series when it leaves the cluster, so labels stay bounded.
func (m *Metrics) forget(release string) {
	if m == nil {
		return
	}
	m.duration.DeletePartialMatch(prometheus.Labels{"release": release})
	m.reconciles.DeletePartialMatch(prometheus.Labels{"release": release})
	m.objects.DeleteLabelValues(release)
	m.drifted.DeleteLabelValues(release)
}

func (m *Metrics) reportRefused() {
	if m != nil {
		m.reportsRefused.Inc()
	}
}

func (m *Metrics) setOutbox(n int) {
	if m != nil {
		m.outbox.Set(float64(n))
	}
}

func (m *Metrics) setConnected(up bool) {
	if m == nil {
		return
	}
	if up {
		m.connected.Set(1)
	} else {
		m.connected.Set(0)
	}
}

func (m *Metrics) setGeneration(g int64) {
	if m != nil {
		m.generation.Set(float64(g))
	}
}

// refused records a refused desired state; generation 0 records that the refusal is over.
func (m *Metrics) refused(generation int64) {
	if m == nil {
		return
	}
	m.refusedGen.Set(float64(generation))
	if generation > 0 {
		m.refusals.Inc()
	}
}
