// Package store is the hub's persistent state behind one interface: clusters, join tokens,
// agent certificates, each cluster's desired state with its generation, the status agents
// report, the audit trail's checkpoints, and the state of sources. SQLite (embedded, the
// default) and PostgreSQL (which several hub replicas share) implement it here with one SQL
// implementation (sqlStore) and a dialect for what differs between them, the same migrations
// and the same contract suite (storetest).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/flotilla/flotilla/internal/audit"
)

// Errors callers branch on; implementations wrap them with the name concerned.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	// ErrConflict: a record changed since it was read (PutRecord, DeleteRecord).
	ErrConflict = errors.New("changed since it was read")
	// ErrTokenInvalid: unknown, expired, already used, or issued for another cluster.
	ErrTokenInvalid = errors.New("join token invalid")
)

// Cluster is a registered agent identity.
type Cluster struct {
	Name      string
	Labels    map[string]string
	CreatedAt time.Time
	// LastSeen is when the agent last reached the hub (zero: never).
	LastSeen     time.Time
	AgentVersion string
}

// JoinToken lets an agent join as Cluster once, before ExpiresAt. The store keeps only a hash
// of the token's secret.
type JoinToken struct {
	ID         string // public, names the token in logs and audit
	SecretHash []byte // sha256 of the secret part
	Cluster    string
	ExpiresAt  time.Time
	UsedAt     time.Time // zero until used
}

// Certificate is a client certificate the hub signed for an agent.
type Certificate struct {
	Serial   string // hex
	Cluster  string
	NotAfter time.Time
	Revoked  bool
}

// DesiredState is what one cluster should run: an opaque document (the scheduler's
// assignments, encoded by the hub) and a generation that rises with every change.
type DesiredState struct {
	Cluster    string
	Generation int64
	Document   []byte
	UpdatedAt  time.Time
}

// AssignmentStatus is the last status an agent reported for one assignment.
type AssignmentStatus struct {
	Cluster            string
	Release            string
	ObservedGeneration int64 // desired-state generation the agent acted on
	Revision           string
	Digest             string
	Phase              string // Pending, Applying, Ready, Failed, Progressing
	Health             string // kstatus summary: Current, InProgress, Failed, "" without wait
	Objects            int
	Drifted            bool
	Conflicts          int
	Error              string
	// Detail is the whole report entry as the agent sent it (JSON), for views that need more.
	Detail     []byte
	ReportedAt time.Time // when the agent produced it
	UpdatedAt  time.Time // when the hub ingested it
}

// ReportStats describes one cluster's report stream.
type ReportStats struct {
	Ingested  int64
	LastSeq   uint64
	Compacted int64
}

// SourceStatus is the last poll of one source.
type SourceStatus struct {
	Name      string
	URL       string
	Revision  string // resolved commit, "" before the first success
	Digest    string // artifact of Revision
	Error     string // last poll's error, "" on success
	CheckedAt time.Time
}

// FleetStatus is the fleet configuration in force and the last error reading a newer one.
type FleetStatus struct {
	Revision  string // commit of the fleet repository, or a content hash for a directory
	Error     string
	UpdatedAt time.Time
}

// Record is a small document the hub's parts share by kind and key (a rollout's state, a
// freeze); Version rises by one at each write.
type Record struct {
	Kind, Key string
	Data      []byte
	Version   int64
	UpdatedAt time.Time
}

// AnyVersion, as the expected version of PutRecord or DeleteRecord, writes whatever is stored.
const AnyVersion int64 = -1

// Touch is one agent sighting for TouchClusters.
type Touch struct {
	Cluster      string
	Seen         time.Time
	AgentVersion string
}

// Store is the hub's persistent state. Every method is safe for concurrent use and atomic.
type Store interface {
	// AddCluster registers c; ErrExists if the name is taken.
	AddCluster(ctx context.Context, c Cluster) error
	// GetCluster returns the named cluster or ErrNotFound.
	GetCluster(ctx context.Context, name string) (Cluster, error)
	// ListClusters returns every cluster, ordered by name.
	ListClusters(ctx context.Context) ([]Cluster, error)
	// SetClusterLabels replaces the cluster's labels; ErrNotFound if it does not exist.
	SetClusterLabels(ctx context.Context, name string, labels map[string]string) error
	// TouchCluster records that the cluster's agent was seen at t, running agentVersion.
	TouchCluster(ctx context.Context, name string, t time.Time, agentVersion string) error
	// TouchClusters does what TouchCluster does for each touch, all in one transaction.
	// Touches of clusters that do not exist (removed since their agent was seen) are skipped,
	// not an error, so that one removal does not lose the others' last-seen times.
	TouchClusters(ctx context.Context, touches []Touch) error
	// RemoveCluster deletes the cluster with its tokens, desired state and statuses, and
	// revokes every certificate issued to it, in one transaction. ErrNotFound if absent.
	RemoveCluster(ctx context.Context, name string) error

	// CreateJoinToken stores t (ErrExists if its ID is taken).
	CreateJoinToken(ctx context.Context, t JoinToken) error
	// ConsumeJoinToken marks token id used, atomically, if secretHash matches, it was issued
	// for cluster, is unused and now is before its expiry; otherwise ErrTokenInvalid (wrapped
	// with the reason). A token is consumed at most once, even under concurrent calls.
	ConsumeJoinToken(ctx context.Context, id string, secretHash []byte, cluster string, now time.Time) error

	// AddCertificate records a certificate the hub signed.
	AddCertificate(ctx context.Context, c Certificate) error
	// CertificateValid reports whether serial was issued to cluster and is not revoked.
	CertificateValid(ctx context.Context, serial, cluster string) (bool, error)
	// RevokeCertificates revokes the cluster's certificate serial, or all for serial "".
	RevokeCertificates(ctx context.Context, cluster, serial string) (int64, error)
	// RevokeJoinTokens makes the cluster's unused join tokens expire at now.
	RevokeJoinTokens(ctx context.Context, cluster string, now time.Time) (int64, error)

	// PutDesiredState stores doc for cluster. The generation rises by one only when doc
	// differs from the stored document (byte for byte); changed says whether it did. The
	// first document of a cluster gets generation 1.
	PutDesiredState(ctx context.Context, cluster string, doc []byte) (generation int64, changed bool, err error)
	// GetDesiredState returns the cluster's desired state, or ErrNotFound.
	GetDesiredState(ctx context.Context, cluster string) (DesiredState, error)
	// ListDesiredStates returns every stored desired state, ordered by cluster (clusters not
	// scheduled yet have none): one query where a fleet view would make one per cluster.
	ListDesiredStates(ctx context.Context) ([]DesiredState, error)

	// IngestReport records a report, identified by (cluster, seq), at most once: for a seq
	// already ingested it changes nothing and returns duplicate=true. Each status replaces
	// the stored status of its (cluster, release) unless the stored one has a later
	// ReportedAt. A report for a removed cluster fails with ErrNotFound.
	IngestReport(ctx context.Context, cluster string, seq uint64, statuses []AssignmentStatus) (duplicate bool, err error)
	// ReportsIngested counts the distinct reports ingested for cluster (for exactly-once checks).
	ReportsIngested(ctx context.Context, cluster string) (int64, error)
	// RecordCompacted records that the agent's outbox dropped n reports, as told by the report
	// (cluster, seq), at most once per (cluster, seq). ErrNotFound for an unknown cluster.
	RecordCompacted(ctx context.Context, cluster string, seq, n uint64) error
	// ReportStats returns what the hub knows of a cluster's report stream: reports ingested,
	// the highest seq ingested (0 if none), and reports compacted away by the agent. A
	// re-joining agent continues after LastSeq, so a wiped state dir never reuses a seq.
	ReportStats(ctx context.Context, cluster string) (ReportStats, error)
	// ListStatuses returns every stored assignment status, ordered by release then cluster.
	ListStatuses(ctx context.Context) ([]AssignmentStatus, error)
	// ClustersReporting returns the clusters that reported a status of release, in byte order.
	ClustersReporting(ctx context.Context, release string) ([]string, error)

	// UpdateAuditCheckpoint reads the audit checkpoint of release on cluster, calls fn once
	// with it (ok false: there is none) and stores what fn returns, or deletes it if keep is
	// false, atomically: updates of one cluster's checkpoints run one after another, on every
	// replica. fn's error aborts the update and is returned, wrapped. ErrNotFound for an
	// unregistered cluster. RemoveCluster deletes the cluster's checkpoints.
	UpdateAuditCheckpoint(ctx context.Context, cluster, release string, fn func(cp audit.Checkpoint, ok bool) (next audit.Checkpoint, keep bool, err error)) error

	// PutSourceStatus replaces the status of source s.Name.
	PutSourceStatus(ctx context.Context, s SourceStatus) error
	// ListSourceStatuses returns every source status, ordered by name.
	ListSourceStatuses(ctx context.Context) ([]SourceStatus, error)

	// GetRecord returns the record (kind, key), or ErrNotFound.
	GetRecord(ctx context.Context, kind, key string) (Record, error)
	// ListRecords returns every record of kind, ordered by key.
	ListRecords(ctx context.Context, kind string) ([]Record, error)
	// PutRecord stores r.Data under (r.Kind, r.Key) if the stored version is expect (0: no
	// record yet; AnyVersion: whatever is stored) and returns the new version; ErrConflict
	// (wrapped) when the stored version is another.
	PutRecord(ctx context.Context, r Record, expect int64) (version int64, err error)
	// DeleteRecord deletes (kind, key) if its version is expect (AnyVersion: any);
	// ErrNotFound if absent, ErrConflict if its version is another.
	DeleteRecord(ctx context.Context, kind, key string, expect int64) error

	// PutFleetStatus replaces the fleet status; GetFleetStatus returns it (zero value if never set).
	PutFleetStatus(ctx context.Context, s FleetStatus) error
	GetFleetStatus(ctx context.Context) (FleetStatus, error)

	Close() error
}
