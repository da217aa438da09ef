// Package v1alpha1 defines Flotilla's fleet configuration: the Source, Release, Notification and
// Project objects a platform team writes, in Kubernetes-shaped YAML, in a directory or a Git fleet
// repository.
//
// # Loading
//
// [LoadDir] reads every *.yaml, *.yml and *.json file under a directory, recursively, skipping
// hidden files and directories (".git", ".github", ".flotilla.yaml"); [Parse] does the same for
// files already in memory, so the hub can read a fleet repository straight out of an artifact. A
// file may hold several YAML documents separated by "---"; empty documents (nothing but comments)
// are skipped. Every object must have apiVersion flotilla.dev/v1alpha1 and kind Source, Release,
// Notification, Project or Window; any other object is an error, not silently ignored, so a stray
// ConfigMap in the fleet repository is noticed.
//
// Decoding is strict, as kubectl's is: an unknown field (a typo such as "selecter", or "Source"
// for "source") is an error naming its full path, and a value of the wrong type is an error rather
// than a conversion. In particular a label value or a tag written as a bare number ("tier: 1",
// "tag: 1.10") must be quoted; YAML would otherwise turn 1.10 into 1.1.
//
// # Validation
//
// Parse and LoadDir validate what they read; [Fleet.Validate] does the same for a fleet built in
// code. Validation never stops at the first problem: the error is an [*InvalidError] listing every
// [Problem] with its file, object ("Release/baseline"), field path
// ("spec.targets[0].selector.matchLabels[env]") and message, one per line, so that one run shows
// everything to fix:
//
//	fleet/releases.yaml: Release/baseline: spec.source: source "platform" is not defined
//
// When a document cannot be decoded, the objects that could be are still validated, but a
// reference to a source whose document failed to decode is not reported again.
//
// # Projects
//
// A Project bounds the releases that name it in spec.project (unset: the built-in platform
// project, which allows everything). Validation checks the Project's own fields and that every
// Release names a defined project; what a project allows is decided by [ProjectSpec.AllowsSource],
// [ProjectSpec.AllowsNamespace] and, for kinds, package internal/project, which the hub's
// scheduler and the agent share. [ParseTenant] reads a team's own fleet repository and refuses
// anything in it that leaves the team's Project. See docs/projects.md.
//
// # Defaults
//
// Unset fields keep their zero value in the decoded objects, so that what is written back is what
// the user wrote; the defaults live in methods ([ReleaseSpec.SelfHealOrDefault],
// [ReleaseSpec.TimeoutOrDefault], [ReleaseSpec.IntervalOrDefault], [SourceSpec.IntervalOrDefault],
// [NotificationSpec.EventsOrDefault], [NotificationSpec.SkewAfterOrDefault],
// [NotificationSpec.RateLimitOrDefault]) that every consumer calls instead of repeating the
// numbers.
//
// # Path templates
//
// A Release's path is a text/template over [PathData]: "clusters/{{ .Cluster.Labels.region }}".
// [ReleaseSpec.PathTemplate] parses it with missingkey=error, so a label the cluster lacks is an
// error for that cluster rather than an empty path segment.
//
// A path template is literal text and three kinds of reference, nothing else:
// {{ .Cluster.Name }}, {{ .Cluster.Labels.<key> }} and {{ index .Cluster.Labels "<key>" }}
// (for keys such as "topology.kubernetes.io/zone"). range, with, if, template, define, block,
// variables, pipelines and every function but index are refused when the fleet is validated,
// naming the release and spec.path: {{ range 1000000000 }}aaaa{{ end }} would otherwise make
// the hub build gigabytes for every cluster. [ExecutePath] also stops at [MaxPathLength] bytes
// (1 KiB), so no path can grow without bound whatever the labels hold.
package v1alpha1
