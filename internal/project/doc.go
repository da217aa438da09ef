// Package project decides what a project's rules allow: which namespaces its objects may live
// in and which group/kinds they may be. The hub validates fleets and schedules releases with
// it, and the agent checks every rendered object with it before applying, so that the two
// layers can never disagree about a rule.
//
// # Kinds
//
// [Rules.AllowsKind] decides in this order:
//   - a kind matched by a Deny entry is denied;
//   - a kind that could grant more than the project holds, or change how the cluster admits
//     objects (see [Escalating]), is denied unless an Allow entry names its group and kind
//     exactly, without "*"; ClusterRole and ClusterRoleBinding are denied to every project
//     but the platform project, whatever Allow says;
//   - any other cluster-scoped kind is denied unless an Allow entry names the kind (its group
//     may be "*");
//   - any other namespaced kind is allowed.
//
// # Namespaces
//
// [Rules.AllowsNamespace] matches a namespace against the rules' names and globs, where "*"
// matches any run of characters ("team-a-*"). An empty list allows no namespace.
//
// Nil rules are the built-in platform project: everything is allowed and the agent applies
// with its own identity. A [Rules] value is never nil in that sense; callers check the pointer.
package project
