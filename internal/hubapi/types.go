// Package hubapi is the hub's user API as Go types and a client: what the CLI and scripts use.
package hubapi

import "time"

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
	Release         string     `json:"release"`
	Cluster         string     `json:"cluster"`
	DesiredRevision string     `json:"desiredRevision"`
	AppliedRevision string     `json:"appliedRevision"`
	Phase           string     `json:"phase"`
	Health          string     `json:"health,omitempty"`
	Drifted         bool       `json:"drifted"`
	Conflicts       int        `json:"conflicts"`
	Objects         int        `json:"objects"`
	Error           string     `json:"error,omitempty"`
	LastSeen        *time.Time `json:"lastSeen"`
	Reachable       bool       `json:"reachable"`
}

// StatusView is the whole fleet.
type StatusView struct {
	Fleet       FleetStatus      `json:"fleet"`
	Sources     []SourceView     `json:"sources"`
	Problems    []string         `json:"problems"`
	Assignments []AssignmentView `json:"assignments"`
}

// APIError is the body of every error the user API returns.
type APIError struct {
	Error string `json:"error"`
}

// FleetStatus is the fleet configuration in force and the last error reading a newer one.
type FleetStatus struct {
	Revision  string    `json:"revision"`
	Error     string    `json:"error,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
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
