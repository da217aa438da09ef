// Package hubclient is the client of the hub's user API, what the CLI and scripts use, with
// the documents it sends and receives. The hub's handlers serve the same types, so that the
// two cannot disagree on a field; the vocabulary of where things stand (an assignment's
// phase, a rollout's views and events) is the domain's, in internal/phase.
package hubclient

import (
	"time"

	"github.com/flotilla/flotilla/internal/phase"
)

// ClusterView is a cluster as the API shows it.
type ClusterView struct {
	Name         string            `json:"name"`
	Labels       map[string]string `json:"labels"`
	CreatedAt    time.Time         `json:"createdAt"`
	LastSeen     *time.Time        `json:"lastSeen,omitempty"`
	AgentVersion string            `json:"agentVersion,omitempty"`
	Reachable    bool              `json:"reachable"`
	Generation   int64             `json:"generation"`
	Assignments  []string          `json:"assignments"`
	// ReportsIngested counts the distinct reports the hub stored from this cluster's agent;
	// ReportsCompacted those its bounded outbox dropped before sending (it says so).
	ReportsIngested  int64  `json:"reportsIngested"`
	ReportsCompacted int64  `json:"reportsCompacted"`
	LastReportSeq    uint64 `json:"lastReportSeq"`
	// OutboxDepth is the number of reports waiting in the agent's outbox, as its last
	// heartbeat to this hub process said; absent when no heartbeat arrived since the hub
	// started.
	OutboxDepth *int `json:"outboxDepth,omitempty"`
	// Status is each assignment's status, as `flotilla status` shows it (filled by the
	// single-cluster endpoint only).
	Status []AssignmentView `json:"status,omitempty"`
	// Conditions summarise the cluster: Reachable, Converged, Drifted, Failed, Conflicted
	// (filled by the single-cluster endpoint only).
	Conditions []Condition `json:"conditions,omitempty"`

	// AgeRecipient is the public half of the age key the cluster's agent generated:
	// `flotilla secret encrypt` encrypts to it. Absent until the agent sent one.
	AgeRecipient string `json:"ageRecipient,omitempty"`
	// ProjectAgeRecipients are the public halves of the agent's keys for the projects other
	// than the platform that deliver to the cluster, by project: `flotilla secret encrypt
	// --project P` encrypts to P's. The platform's is AgeRecipient.
	ProjectAgeRecipients map[string]string `json:"projectAgeRecipients,omitempty"`
}

// Condition is one fact about a cluster, in the shape of a Kubernetes condition: Type holds
// (Status "True") or not ("False"), with a CamelCase Reason and a sentence for people.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// JoinView is what adding a cluster returns.
type JoinView struct {
	Name         string            `json:"name"`
	Labels       map[string]string `json:"labels"`
	JoinToken    string            `json:"joinToken"`
	ExpiresAt    time.Time         `json:"expiresAt"`
	AgentCommand string            `json:"agentCommand"`
}

// ReleaseView is a release with how many clusters it is assigned to.
type ReleaseView struct {
	Name      string   `json:"name"`
	Source    string   `json:"source"`
	Path      string   `json:"path"`
	Namespace string   `json:"namespace,omitempty"`
	Clusters  []string `json:"clusters"`
}

// SourceView is a source's last poll.
type SourceView struct {
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	Revision  string    `json:"revision"`
	Digest    string    `json:"digest"`
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checkedAt"`
}

// AssignmentView is one release on one cluster: the unit `flotilla status` shows. Its JSON
// field names are a documented contract for scripts.
type AssignmentView struct {
	Release         string `json:"release"`
	Cluster         string `json:"cluster"`
	DesiredRevision string `json:"desiredRevision"`
	// AppliedRevision is the revision whose objects the agent last applied: "" before the
	// first report, and when its last report says nothing of the revision it tried was
	// applied (it failed before applying anything: download, render, validation).
	AppliedRevision string `json:"appliedRevision"`
	Phase           Phase  `json:"phase"`
	// Health is the kstatus summary of the last report (Current, InProgress, Failed); ""
	// when the release does not wait for health or no report came yet.
	Health    string     `json:"health,omitempty"`
	Drifted   bool       `json:"drifted"`
	Conflicts int        `json:"conflicts"`
	Objects   int        `json:"objects"`
	Error     string     `json:"error,omitempty"`
	LastSeen  *time.Time `json:"lastSeen"`
	Reachable bool       `json:"reachable"`
	// DesiredDigest and AppliedDigest are the artifacts behind the two revisions.
	DesiredDigest string `json:"desiredDigest,omitempty"`
	AppliedDigest string `json:"appliedDigest,omitempty"`
	// ReportedPhase is the phase the agent last reported, kept when Phase says Unreachable
	// or Progressing instead; "" before the first report.
	ReportedPhase Phase `json:"reportedPhase,omitempty"`
	// ReportedRevision and ReportedDigest are what the agent's last report concerns: the
	// revision it applied, or tried to apply when AppliedRevision is "".
	ReportedRevision string `json:"reportedRevision,omitempty"`
	ReportedDigest   string `json:"reportedDigest,omitempty"`
	// ReportedAt is when the agent produced its last report of this assignment.
	ReportedAt *time.Time `json:"reportedAt,omitempty"`
	// Waiting says what holds the release back (phase Waiting), and Rollout where its
	// rollout stands on this cluster; "" when nothing does.
	Waiting string `json:"waiting,omitempty"`
	Rollout string `json:"rollout,omitempty"`
}

// Phase is where an assignment stands (package phase, the one vocabulary).
type Phase = phase.Phase

// Phases of an AssignmentView, as package phase names them.
const (
	PhasePending     = phase.Pending
	PhaseApplying    = phase.Applying
	PhaseProgressing = phase.Progressing
	PhaseReady       = phase.Ready
	PhaseFailed      = phase.Failed
	PhaseUnreachable = phase.Unreachable
	PhaseWaiting     = phase.Waiting
	PhaseRemoved     = phase.Removed
)

// ReleaseSummary counts one release's assignments by phase. Ready, Progressing, Pending,
// Failed and Unreachable partition Clusters; Drifted and Conflicted count, among the same
// clusters, those whose last report found drift or conflicts.
type ReleaseSummary struct {
	Release string `json:"release"`
	// DesiredRevision is the revision most of the release's clusters should run (during a
	// change of revision a few may still be scheduled on the previous one).
	DesiredRevision string `json:"desiredRevision"`
	Clusters        int    `json:"clusters"`
	Ready           int    `json:"ready"`
	Progressing     int    `json:"progressing"`
	Pending         int    `json:"pending"`
	Failed          int    `json:"failed"`
	Unreachable     int    `json:"unreachable"`
	Drifted         int    `json:"drifted"`
	Conflicted      int    `json:"conflicted"`
}

// StatusView is the whole fleet.
type StatusView struct {
	Fleet    FleetStatus  `json:"fleet"`
	Sources  []SourceView `json:"sources"`
	Problems []string     `json:"problems"`
	// Releases summarises Assignments per release, in release order.
	Releases    []ReleaseSummary `json:"releases"`
	Assignments []AssignmentView `json:"assignments"`
}

// StatusFilter narrows a status view on the hub; zero fields select everything.
type StatusFilter struct {
	Release string
	Cluster string
	// SummaryOnly asks for the per-release counts without the assignments (an empty list):
	// what `flotilla status` prints, without moving 20,000 assignments for it.
	SummaryOnly bool
}

// SkewView lists, per release and desired revision, the revisions its clusters run.
type SkewView struct {
	Releases []ReleaseSkew `json:"releases"`
}

// ReleaseSkew is one group of assignments that should be identical: one release, one desired
// revision and artifact. Groups splits them by the revision they applied, the desired group
// first, then by size; Skewed counts the clusters outside the desired group.
type ReleaseSkew struct {
	Release         string          `json:"release"`
	DesiredRevision string          `json:"desiredRevision"`
	DesiredDigest   string          `json:"desiredDigest"`
	Clusters        int             `json:"clusters"`
	Skewed          int             `json:"skewed"`
	Groups          []RevisionGroup `json:"groups"`
}

// RevisionGroup is the clusters of a ReleaseSkew that applied one revision ("" and "": none
// reported yet), or, with Failed, that failed to apply it.
type RevisionGroup struct {
	Revision string   `json:"revision"`
	Digest   string   `json:"digest"`
	Desired  bool     `json:"desired"`
	Failed   bool     `json:"failed"`
	Count    int      `json:"count"`
	Clusters []string `json:"clusters"`
}

// DriftView lists the drifted objects the agents last reported.
type DriftView struct {
	Objects []DriftedObject `json:"objects"`
}

// DriftedObject is an object found changed by hand in a cluster, with the field paths that
// differ from what the release applies; Healed says whether the agent took the change back
// (selfHeal) or only reported it.
type DriftedObject struct {
	Cluster    string    `json:"cluster"`
	Release    string    `json:"release"`
	Object     string    `json:"object"`
	Namespace  string    `json:"namespace,omitempty"`
	Paths      []string  `json:"paths"`
	Healed     bool      `json:"healed"`
	ReportedAt time.Time `json:"reportedAt"`
	// Group, Kind and Name, and Fields (see drift.go), are set when the agent's report
	// detailed the object; reports beyond the agent's bounds carry the paths alone.
	Group  string       `json:"group,omitempty"`
	Kind   string       `json:"kind,omitempty"`
	Name   string       `json:"name,omitempty"`
	Fields []DriftField `json:"fields,omitempty"`
}

// DriftFilter narrows the drift view; zero fields select everything.
type DriftFilter struct {
	Release string
	Cluster string
}

// APIError is the body of every error the user API returns.
type APIError struct {
	Error string `json:"error"`
}

// FleetStatus is the fleet configuration in force and the last error reading a newer one.
type FleetStatus struct {
	Revision string `json:"revision"`
	// Error says why the newest fleet configuration was rejected: each problem on a line,
	// naming the file in the fleet repository at the commit ("fleet/releases.yaml@272e309
	// line 38: ..."). The configuration at Revision stays in force.
	Error string `json:"error,omitempty"`
	// RejectedCommit is the fleet repository's commit whose configuration was rejected.
	RejectedCommit string `json:"rejectedCommit,omitempty"`
	// RolloutNotice is one sentence for people, set when the rejected commit's manifests
	// roll out anyway through a source of the same repository: clusters get that commit's
	// manifests with the release settings of the configuration in force.
	RolloutNotice string    `json:"rolloutNotice,omitempty"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// AuditRecord is one record of the hub's audit log: who (actor) did what (action) to which
// cluster and release, when, with the particulars in detail, chained by hash to the record
// before. Its JSON form is the one `flotilla audit -o jsonl` exports.
type AuditRecord struct {
	Seq      int64          `json:"seq"`
	Time     time.Time      `json:"time"`
	Actor    string         `json:"actor"`
	Action   string         `json:"action"`
	Cluster  string         `json:"cluster,omitempty"`
	Release  string         `json:"release,omitempty"`
	Detail   map[string]any `json:"detail,omitempty"`
	PrevHash string         `json:"prevHash"`
	Hash     string         `json:"hash"`
}

// AuditFilter selects audit records; zero fields select everything.
type AuditFilter struct {
	Since   time.Time
	Cluster string
	Release string
	Action  string
	// Limit keeps the newest Limit records; 0 is the hub's default (1000) for Audit and
	// everything for ExportAudit.
	Limit int
}

// AuditVerification is the answer of a successful audit verification: how many records were
// checked and the head of the chain (keep a copy to detect a later rewrite).
type AuditVerification struct {
	Checked  int64  `json:"checked"`
	OK       bool   `json:"ok"`
	HeadSeq  int64  `json:"headSeq"`
	HeadHash string `json:"headHash"`
}
