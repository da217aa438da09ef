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
