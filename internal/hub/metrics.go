package hub

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flotilla/flotilla/internal/hub/agentapi"
	"github.com/flotilla/flotilla/internal/hub/controller"
)

// metrics are the hub's Prometheus metrics, in a registry of the hub's own. Labels are bounded
// by sources and outcomes, never by cluster or object, so 10,000 clusters add no series.
type metrics struct {
	registry   *prometheus.Registry
	agent      *agentapi.Metrics
	controller controller.Metrics
}

func newMetrics(h *Hub) *metrics {
	m := &metrics{
		registry:   prometheus.NewRegistry(),
		agent:      agentapi.NewMetrics(),
		controller: controller.NewMetrics(),
	}
	connected := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flotilla_hub_agents_connected", Help: "Agents with an open watch stream.",
	}, func() float64 { return float64(h.watchers.Count()) })
	m.registry.MustRegister(m.controller.Collectors()...)
	m.registry.MustRegister(m.agent.Collectors()...)
	m.registry.MustRegister(connected,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(h.repl.Collectors()...)
	return m
}

// Metrics serves the hub's metrics in the Prometheus text format.
func (h *Hub) Metrics() http.Handler {
	return promhttp.HandlerFor(h.metrics.registry, promhttp.HandlerOpts{Registry: h.metrics.registry})
}
