// Package agekeys keeps the age recipient of each cluster: the public half of the key its
// agent generated, which `flotilla secret encrypt` encrypts Secrets to. The agent sends it
// with its join and every heartbeat; the hub stores it as a record (kind "agekey", key the
// cluster), writing only when it changed and auditing each change ("cluster.agekey"). The
// private half never leaves the agent.
package agekeys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/secrets"
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
}
