package hub

import (
	"context"
	"path/filepath"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/notify"
)

// newNotifier wires the notification runner to the hub. The status view is read through
// h.user when it evaluates: New sets h.user only once both listeners are bound, after this.
func (h *Hub) newNotifier() *notify.Runner {
	r := notify.NewRunner(notify.Deps{
		Leader: h.IsLeader,
		Fleet:  func() *v1alpha1.Fleet { return h.ctrl.View().Fleet },
		Status: func(ctx context.Context) (hubclient.StatusView, error) { return h.user.FleetStatus(ctx) },
		ClusterLabels: func(ctx context.Context) (map[string]map[string]string, error) {
			clusters, err := h.store.ListClusters(ctx)
			if err != nil {
				return nil, err
			}
			labels := make(map[string]map[string]string, len(clusters))
			for _, c := range clusters {
				labels[c.Name] = c.Labels
			}
			return labels, nil
		},
		StateFile:        filepath.Join(h.opts.DataDir, NotifyStateFile),
		UnreachableAfter: h.opts.UnreachableAfter,
		Clock:            h.clock,
		Logger:           h.log,
	}, h.opts.Notify)
	h.metrics.registry.MustRegister(r.Collectors()...)
	return r
}

// NotifyEvaluations counts the hub's evaluations of its notifications since Run started, so
// that a test can wait for several instead of sleeping.
func (h *Hub) NotifyEvaluations() int64 { return h.notifier.Evaluations() }
