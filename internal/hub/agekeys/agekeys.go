// Package agekeys keeps the age recipient of each cluster: the public half of the key its
// agent generated, which `flotilla secret encrypt` encrypts Secrets to. The agent sends it
// with its join and every heartbeat; the hub stores it as a record (kind "agekey", key the
// cluster), writing only when it changed and auditing each change ("cluster.agekey"). The
// private half never leaves the agent.
//
// It is the hub's one home for age keys: the records, their checks (the agent endpoint
// refuses what CheckProjects refuses), the tracker that writes them, and the user API's route
// that lists them (API, GET /api/v1/agekeys). The agent keeps the private halves
// (internal/agent), and internal/secrets holds what both sides do with a key.
package agekeys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/secrets"
	"github.com/flotilla/flotilla/internal/textcut"
)

// Kind is the store record kind of a cluster's recipient.
const Kind = "agekey"

// Store is the part of the hub's store this package uses.
type Store interface {
	GetRecord(ctx context.Context, kind, key string) (store.Record, error)
	PutRecord(ctx context.Context, r store.Record, expect int64) (int64, error)
}

type record struct {
	Recipient string `json:"recipient"`
}

// Get returns the cluster's recipient, or "" when its agent has sent none yet.
func Get(ctx context.Context, st interface {
	GetRecord(ctx context.Context, kind, key string) (store.Record, error)
}, cluster string) (string, error) {
	r, err := st.GetRecord(ctx, Kind, cluster)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return Decode(r)
}

// Decode returns the recipient a record of Kind holds.
func Decode(r store.Record) (string, error) {
	var rec record
	if err := json.Unmarshal(r.Data, &rec); err != nil {
		return "", fmt.Errorf("%s %q: %w", Kind, r.Key, err)
	}
	return rec.Recipient, nil
}

// Delete deletes a removed cluster's recipient: a cluster registered again under its name
// joins with a new key.
func Delete(ctx context.Context, st interface {
	DeleteRecord(ctx context.Context, kind, key string, expect int64) error
}, cluster string) error {
	err := st.DeleteRecord(ctx, Kind, cluster, store.AnyVersion)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	err = st.DeleteRecord(ctx, ProjectKind, cluster, store.AnyVersion)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// Tracker records the recipients agents send. It remembers the last one it stored per
// cluster, so a heartbeat costs a store read only for a cluster this hub process has not
// seen yet; one entry per cluster bounds it by the fleet.
type Tracker struct {
	st     Store
	record func(ctx context.Context, e audit.Event)
	log    *slog.Logger

	mu    sync.Mutex
	known map[string]string
	// knownProjects: the project recipients last stored, by cluster (ObserveProjects).
	knownProjects map[string]map[string]string
}

// NewTracker returns a tracker that stores in st and audits with record.
func NewTracker(st Store, record func(ctx context.Context, e audit.Event), log *slog.Logger) *Tracker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tracker{st: st, record: record, log: log, known: map[string]string{}}
}

// Observe records that cluster's agent sent recipient ("" from an agent without a key:
// nothing happens). A recipient that is not an age X25519 recipient is refused.
func (t *Tracker) Observe(ctx context.Context, cluster, recipient string) error {
	if recipient == "" {
		return nil
	}
	if err := secrets.CheckRecipient(recipient); err != nil {
		return err
	}
	t.mu.Lock()
	same := t.known[cluster] == recipient
	t.mu.Unlock()
	if same {
		return nil
	}
	old, err := Get(ctx, t.st, cluster)
	if err != nil {
		return err
	}
	if old != recipient {
		data, _ := json.Marshal(record{Recipient: recipient})
		if _, err := t.st.PutRecord(ctx, store.Record{Kind: Kind, Key: cluster, Data: data}, store.AnyVersion); err != nil {
			return err
		}
		t.log.Info("cluster age recipient recorded", "cluster", cluster, "recipient", recipient, "previous", old)
		detail := map[string]any{"recipient": recipient}
		if old != "" {
			// Secrets encrypted for the old key no longer decrypt there: re-encrypt them.
			detail["previous"] = old
		}
		t.record(ctx, audit.Event{Actor: "agent:" + cluster, Action: "cluster.agekey", Cluster: cluster, Detail: detail})
	}
	t.mu.Lock()
	t.known[cluster] = recipient
	t.mu.Unlock()
	return nil
}

// Forget drops what the tracker remembers of a removed cluster.
func (t *Tracker) Forget(cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.known, cluster)
	delete(t.knownProjects, cluster)
}

// ProjectKind is the store record kind of a cluster's per-project recipients (key the
// cluster): the public halves of the keys its agent holds for the projects other than the
// platform that deliver to it. A release decrypts only with its own project's key; the
// platform's is the cluster's recipient (Kind).
const ProjectKind = "agekey.project"

// MaxProjects bounds the project recipients one agent may send, as the agent bounds its keys.
const MaxProjects = 1024

type projectRecord struct {
	Projects map[string]string `json:"projects"`
}

// DecodeProjects returns the project recipients a record of ProjectKind holds, by project.
func DecodeProjects(r store.Record) (map[string]string, error) {
	var rec projectRecord
	if err := json.Unmarshal(r.Data, &rec); err != nil {
		return nil, fmt.Errorf("%s %q: %w", ProjectKind, r.Key, err)
	}
	return rec.Projects, nil
}

// GetProjects returns the cluster's project recipients, by project; nil when its agent has
// sent none.
func GetProjects(ctx context.Context, st interface {
	GetRecord(ctx context.Context, kind, key string) (store.Record, error)
}, cluster string) (map[string]string, error) {
	r, err := st.GetRecord(ctx, ProjectKind, cluster)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return DecodeProjects(r)
}

// CheckProjects refuses project recipients an agent sent that are not what an agent sends:
// over MaxProjects, a project name that is not a DNS label or twice, or a recipient that is
// not an age X25519 recipient.
func CheckProjects(projects map[string]string) error {
	if len(projects) > MaxProjects {
		return fmt.Errorf("%d project age recipients, at most %d", len(projects), MaxProjects)
	}
	for p, r := range projects {
		if len(content.IsDNS1123Label(p)) > 0 {
			return fmt.Errorf("project age recipient: project name %q is not a DNS label", textcut.Cut(p, 64))
		}
		if err := secrets.CheckRecipient(r); err != nil {
			return fmt.Errorf("project %s: %w", p, err)
		}
	}
	return nil
}

// ObserveProjects records the project recipients cluster's agent sent (none from an agent
// older than keys per project: nothing happens), replacing those it sent before.
func (t *Tracker) ObserveProjects(ctx context.Context, cluster string, projects map[string]string) error {
	if len(projects) == 0 {
		return nil
	}
	if err := CheckProjects(projects); err != nil {
		return err
	}
	t.mu.Lock()
	same := t.knownProjects != nil && maps.Equal(t.knownProjects[cluster], projects)
	t.mu.Unlock()
	if same {
		return nil
	}
	old, err := GetProjects(ctx, t.st, cluster)
	if err != nil {
		return err
	}
	if !maps.Equal(old, projects) {
		data, _ := json.Marshal(projectRecord{Projects: projects})
		if _, err := t.st.PutRecord(ctx, store.Record{Kind: ProjectKind, Key: cluster, Data: data}, store.AnyVersion); err != nil {
			return err
		}
		for _, p := range slices.Sorted(maps.Keys(projects)) {
			if old[p] == projects[p] {
				continue
			}
			t.log.Info("project age recipient recorded", "cluster", cluster, "project", p, "recipient", projects[p], "previous", old[p])
			detail := map[string]any{"project": p, "recipient": projects[p]}
			if old[p] != "" {
				detail["previous"] = old[p]
			}
			t.record(ctx, audit.Event{Actor: "agent:" + cluster, Action: "cluster.agekey", Cluster: cluster, Detail: detail})
		}
	}
	t.mu.Lock()
	if t.knownProjects == nil {
		t.knownProjects = map[string]map[string]string{}
	}
	t.knownProjects[cluster] = maps.Clone(projects)
	t.mu.Unlock()
	return nil
}
