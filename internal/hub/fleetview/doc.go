// Package fleetview computes the hub's fleet views (status per assignment, summaries per
// release, revision skew, drift, cluster conditions) as pure functions over data: the hub
// reads the store and the clock, these functions do the rest, so the views can be tested in
// microseconds and computed for thousands of clusters without I/O.
//
// # Phases
//
// An assignment's phase is the agent's last reported phase, except:
//   - Pending before the first report (or while the cluster has no agent yet);
//   - Progressing while the reported revision or artifact is not the desired one (the agent
//     has not acted on the new desired state yet);
//   - Unreachable when the cluster's agent has been heard from before but not within the
//     hub's threshold: never Ready on old news. The reported phase stays in ReportedPhase.
//
// Waiting (a window, a freeze, a suspension or a release it depends on holds the release
// back on the cluster) is the agent's phase: its report names the revision still in force
// and the pending one held back, so Waiting stands while the pending revision is the desired
// one, and AssignmentView.Waiting is the agent's sentence (`window "business-hours" opens
// 22:00 Europe/Berlin`). AssignmentView.Rollout is the scheduler's line for a cluster its
// release's rollout holds at an earlier revision ("wave eu waits for canary"), whatever the
// phase. Summaries count Waiting among Progressing.
//
// # Skew
//
// Assignments that should be identical (one release, one desired revision and artifact) are
// grouped by the revision and artifact they applied; every cluster outside the desired group
// is skewed: behind, ahead, or on something else.
package fleetview
