// Package schedule turns a fleet configuration into what each cluster should run: releases x
// matching clusters -> assignments.
//
// [Schedule] is a pure function, in the way etcd's raft core is: it reads the fleet, the
// registered clusters, the artifacts the hub has resolved and the previous plan, and returns a
// [Plan]; it does no I/O, keeps no state between calls and reads no clock. The hub calls it
// whenever one of its inputs changes, stores each cluster's assignments with
// [desired.Encode], and bumps the cluster's desired-state generation only when those bytes
// change. Because it is pure it
// can be tested in microseconds and run at fleet scale in the simulator.
//
// # Rules
//
// A release matches a cluster when any of its targets' selectors does: every matchLabels pair
// is among the cluster's labels; an empty selector matches every cluster; a release without
// targets matches none.
//
// A matching release becomes one [desired.Assignment] for that cluster, carrying the artifact
// of the release's source (URL, revision, digest), the path resolved for the cluster, the release's
// settings with their defaults applied (selfHeal true, timeout 5m, interval 10m) and the
// variables for substitution.
//
// The path is the release's text/template over .Cluster.Name and .Cluster.Labels, executed
// with missingkey=error. It must resolve to a path inside the source: not absolute, no "..".
//
// # Projects
//
// Every release belongs to a project (spec.project; unset is the built-in "platform"). A
// release matches a cluster only when its project's clusterSelector matches it too: the
// project narrows the targets, never widens them; a release whose targets select clusters
// none of which the project allows gets a Problem saying so. A release whose project does not allow its
// source (by name, or by the source's URL against the project's URL patterns), does not allow
// its default namespace, or is not defined, is not assigned afresh to any cluster: one
// Problem names the project and the rule broken, and a cluster that had the release keeps its
// previous assignment, as for a source without an artifact (a mistaken commit never prunes).
//
// Each assignment carries its project's rules (project.Rules: namespaces, kinds, the
// ServiceAccount), which the agent checks every object against before it applies anything;
// a kept assignment gets the project's current rules, so that a narrowed project binds what
// is already running. The built-in platform project, when the fleet does not define a
// Project of that name, carries none: everything is allowed, with the agent's own identity.
//
// # Variables
//
// Each assignment's Vars hold the cluster's variables, cluster_name and cluster_label_<key>
// (every character of the key outside [A-Za-z0-9_] replaced by '_'; when two keys map to the
// same name the key that sorts last wins), computed by v1alpha1.ClusterVariables for the
// scheduler and the renderer alike, and the release's variables. The cluster wins every collision: what a manifest reads as
// ${cluster_label_region} is the cluster's label whenever the cluster has one, so a release can
// set cluster_label_region only as a default for clusters without the label. A release that sets
// cluster_name is reported as a [Problem] (the assignment is still made, with the cluster's
// name), since that can only be a mistake; validation in api/v1alpha1 refuses it earlier.
//
// # Never pruning by accident
//
// An agent prunes a whole release only on its tombstone. So the scheduler leaves an assignment
// out only when the fleet configuration says so, the release was removed or no longer selects
// the cluster, and then writes a [desired.Tombstone] naming that reason and the fleet
// revision (kept until the release is assigned again, at most [MaxTombstones] per cluster).
// Without a fleet configuration it changes nothing. When it cannot build an assignment for another reason, it
// keeps the cluster's previous assignment for that release, if there is one, unchanged
// (artifact, path and settings together, since a new path may not exist in the old revision),
// and reports a Problem:
//   - the release's source has no artifact (not resolved yet, or its last resolution failed):
//     a source outage never prunes anything;
//   - the path does not resolve for the cluster (a label it names is missing, a template
//     error) or leaves the source.
//
// Without a previous assignment such a release is simply not assigned to that cluster yet.
//
// # Output
//
// Plan.Assignments has an entry for every cluster given, empty when nothing matches, each list
// sorted by release name; Problems are sorted by release, then cluster. The same inputs give
// the same plan whatever the order of clusters and releases, and [desired.Encode] gives the
// same bytes for the same assignments whatever their order.
package schedule
