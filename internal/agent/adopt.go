package agent

import (
	"time"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// adoptRules are the assignment's adopt rules as the reconciler takes them, nil without
// any. The refusal of an object the old tool wrote recently is judged by the agent's clock,
// against the release's interval.
func adoptRules(as *agentv1.Assignment, now time.Time) *reconcile.Adopt {
	a := as.GetAdopt()
	if a == nil {
		return nil
	}
	return &reconcile.Adopt{
		FromManagers: a.GetFromManagers(), HelmRelease: a.GetHelmRelease(), HelmReleaseNamespace: a.GetHelmReleaseNamespace(),
		Interval: time.Duration(as.GetIntervalSeconds()) * time.Second, Now: now,
	}
}
