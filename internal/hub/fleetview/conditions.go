package fleetview

import (
	"fmt"
	"strings"
	"time"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// Condition types of a cluster, in the order Conditions returns them.
const (
	ConditionReachable  = "Reachable"
	ConditionConverged  = "Converged"
	ConditionDrifted    = "Drifted"
	ConditionFailed     = "Failed"
	ConditionConflicted = "Conflicted"
)

// Conditions summarises a cluster from its last-seen time (zero: never), the unreachable
// threshold, now, and its assignments' views: Reachable, Converged (every assignment Ready),
// Drifted, Failed and Conflicted, each with a reason and a message naming the releases.
func Conditions(lastSeen time.Time, threshold time.Duration, now time.Time, status []hubclient.AssignmentView) []hubclient.Condition {
	out := make([]hubclient.Condition, 0, 5)
	switch {
	case lastSeen.IsZero():
		out = append(out, cond(ConditionReachable, false, "NeverSeen", "no agent has connected for this cluster yet"))
	case now.Sub(lastSeen) >= threshold:
		out = append(out, cond(ConditionReachable, false, "Silent", fmt.Sprintf("agent last heard from %s ago (unreachable after %s)", now.Sub(lastSeen).Round(time.Second), threshold)))
	default:
		out = append(out, cond(ConditionReachable, true, "AgentReporting", fmt.Sprintf("agent heard from %s ago", now.Sub(lastSeen).Round(time.Second))))
	}

	var notReady, drifted, failed, conflicted []string
	for _, a := range status {
		if a.Phase != hubclient.PhaseReady {
			notReady = append(notReady, a.Release+" "+string(a.Phase))
		}
		if a.Drifted {
			drifted = append(drifted, a.Release)
		}
		if a.Phase == hubclient.PhaseFailed || (a.Phase == hubclient.PhaseUnreachable && a.ReportedPhase == hubclient.PhaseFailed) {
			msg := a.Release
			if a.Error != "" {
				msg += ": " + a.Error
			}
			failed = append(failed, msg)
		}
		if a.Conflicts > 0 {
			conflicted = append(conflicted, fmt.Sprintf("%s (%d)", a.Release, a.Conflicts))
		}
	}
	switch {
	case len(status) == 0:
		out = append(out, cond(ConditionConverged, true, "NothingAssigned", "no release selects this cluster"))
	case len(notReady) == 0:
		out = append(out, cond(ConditionConverged, true, "AllReady", fmt.Sprintf("all %d assignments Ready on their desired revision", len(status))))
	default:
		out = append(out, cond(ConditionConverged, false, "NotReady", fmt.Sprintf("%d of %d assignments not Ready: %s", len(notReady), len(status), strings.Join(notReady, ", "))))
	}
	out = append(out, flag(ConditionDrifted, drifted, "DriftReported", "NoDrift", "drift in "))
	out = append(out, flag(ConditionFailed, failed, "ApplyFailed", "NoFailures", ""))
	out = append(out, flag(ConditionConflicted, conflicted, "ConflictsReported", "NoConflicts", "conflicts in "))
	return out
}

func flag(typ string, items []string, yes, no, prefix string) hubclient.Condition {
	if len(items) == 0 {
		return cond(typ, false, no, "")
	}
	return cond(typ, true, yes, prefix+strings.Join(items, "; "))
}

func cond(typ string, ok bool, reason, msg string) hubclient.Condition {
	st := "False"
	if ok {
		st = "True"
	}
	return hubclient.Condition{Type: typ, Status: st, Reason: reason, Message: msg}
}
