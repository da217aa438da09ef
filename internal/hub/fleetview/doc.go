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
// # Skew
//
// Assignments that should be identical (one release, one desired revision and artifact) are
// grouped by the revision and artifact they applied; every cluster outside the desired group
// is skewed: behind, ahead, or on something else.
package fleetview
