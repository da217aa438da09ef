// Package desired is a cluster's desired state: the one model of it ([Document], its
// [Assignment]s, [Tombstone]s, gates and [SyncRequest]s) that the hub schedules, stores and
// serves and the agent reconciles, with its two encodings.
//
// The hub stores a document as canonical JSON ([Encode], [DecodeDocument]; [Cache] keeps
// documents decoded for the views). The agent receives it as the agent protocol's
// DesiredState message; [ToProto] and [FromProto], in proto.go, are the only conversion
// between the two, and the only place that knows the wire form's units (seconds for
// timeouts, milliseconds for render budgets, JSON for Helm values). The agent converts once,
// where a document reaches it (the watch stream, its state dir, a bundle), and works on the
// Go types from there; it keeps what it accepted in the wire form ([StateToProto], and
// [AssignmentToProto] for the assignment in force of each release), as agents before this
// model did, so that state dirs stay readable across upgrades.
//
// # Adding a field
//
// A new assignment (or tombstone, gate, sync request) field touches three places: the Go type
// here, the message in proto/flotilla/agent/v1/agent.proto, and the conversion in proto.go.
// The round-trip test fills every field of both sides and fails when a field is on one side
// only or the conversion drops it; a field that is deliberately not sent (hub only, as
// [Assignment].SourceDigest) is listed there with the reason.
//
// The package is below both the hub and the agent: it imports neither.
package desired
