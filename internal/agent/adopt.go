package agent

import (
	"time"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/desired"
)

// adoptRules are the assignment's adopt rules as the reconciler takes them, nil without
// any. The refusal of an object the old tool wrote recently is judged by the agent's clock,
// against the release's interval.
func adoptRules(as *desired.Assignment, now time.Time) *reconcile.Adopt {
	a := as.Adopt
	if a == nil {
		return nil
	}
	return &reconcile.Adopt{
		FromManagers: a.FromManagers, HelmRelease: a.HelmRelease, HelmReleaseNamespace: a.HelmReleaseNamespace,
		Interval: as.Interval, Now: now,
	}
}
