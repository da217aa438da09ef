package hub

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flotilla/flotilla/internal/audit"
)

// newAuditSink prepares the streaming audit sink when Options.AuditSink names a URL, and
// registers its metrics: lag (records not yet acknowledged) and failed deliveries by a
// bounded reason (network, 429, 5xx, 4xx, cursor, chain).
func (h *Hub) newAuditSink(ctx context.Context) error {
	o := h.opts.AuditSink
	if o.URL == "" {
		return nil
	}
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_hub_audit_sink_failures_total", Help: "Failed deliveries to the audit sink, by reason (network, 429, 5xx, 4xx, cursor, chain); each is retried.",
	}, []string{"reason"})
	delivered := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "flotilla_hub_audit_sink_records_delivered_total", Help: "Audit records the sink acknowledged.",
	})
	if o.Logger == nil {
		o.Logger = h.log
	}
	o.Observe = func(a audit.SinkAttempt) {
		if a.Err != nil {
			failures.WithLabelValues(a.Reason).Inc()
			return
		}
		delivered.Add(float64(a.Records))
	}
	s, err := audit.NewSink(ctx, h.audit, o)
	if err != nil {
		return err
	}
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flotilla_hub_audit_sink_lag_records", Help: "Audit records not yet acknowledged by the sink.",
	}, func() float64 { return float64(s.Lag()) })
	h.metrics.registry.MustRegister(failures, delivered, lag)
	h.auditSink = s
	return nil
}

// runAuditSink delivers the audit trail until ctx ends (nothing without a sink).
func (h *Hub) runAuditSink(ctx context.Context) {
	if h.auditSink == nil {
		return
	}
	h.log.Info("streaming the audit trail", "sink", h.auditSink.String(), "cursor", h.auditSink.Cursor())
	if err := h.auditSink.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		h.log.Error("audit sink stopped", "error", err)
	}
}
