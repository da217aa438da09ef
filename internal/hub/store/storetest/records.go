package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/store"
)

// testRecords: records are written by compare-and-swap on their version, so that writers on
// several replicas never lose each other's changes.
func (o opener) testRecords(t *testing.T) {
	ctx := context.Background()
	s := o.new(t)

	if _, err := s.GetRecord(ctx, "rollout", "web"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRecord of nothing: %v, want ErrNotFound", err)
	}
	v, err := s.PutRecord(ctx, store.Record{Kind: "rollout", Key: "web", Data: []byte(`{"a":1}`)}, 0)
	if err != nil || v != 1 {
		t.Fatalf("first PutRecord = %d, %v; want 1", v, err)
	}
	if _, err := s.PutRecord(ctx, store.Record{Kind: "rollout", Key: "web", Data: []byte(`{}`)}, 0); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("PutRecord expecting none over an existing record: %v, want ErrConflict", err)
	}
	if v, err = s.PutRecord(ctx, store.Record{Kind: "rollout", Key: "web", Data: []byte(`{"a":2}`)}, 1); err != nil || v != 2 {
		t.Fatalf("PutRecord at version 1 = %d, %v; want 2", v, err)
	}
	if _, err := s.PutRecord(ctx, store.Record{Kind: "rollout", Key: "web", Data: []byte(`{}`)}, 1); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("PutRecord at a stale version: %v, want ErrConflict", err)
	}
	if v, err = s.PutRecord(ctx, store.Record{Kind: "freeze", Key: "all", Data: []byte(`x`)}, store.AnyVersion); err != nil || v != 1 {
		t.Fatalf("PutRecord at AnyVersion = %d, %v; want 1", v, err)
	}
	r, err := s.GetRecord(ctx, "rollout", "web")
	if err != nil || string(r.Data) != `{"a":2}` || r.Version != 2 || r.UpdatedAt.IsZero() {
		t.Fatalf("GetRecord = %+v, %v; want data {\"a\":2} at version 2 with a time", r, err)
	}
	if _, err := s.PutRecord(ctx, store.Record{Kind: "rollout", Key: "api", Data: []byte(`{}`)}, 0); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListRecords(ctx, "rollout")
	if err != nil || len(list) != 2 || list[0].Key != "api" || list[1].Key != "web" {
		t.Fatalf("ListRecords(rollout) = %+v, %v; want api then web, not the freeze", list, err)
	}

	if err := s.DeleteRecord(ctx, "rollout", "web", 1); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("DeleteRecord at a stale version: %v, want ErrConflict", err)
	}
	if err := s.DeleteRecord(ctx, "rollout", "web", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRecord(ctx, "rollout", "web", store.AnyVersion); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteRecord of nothing: %v, want ErrNotFound", err)
	}

	// Concurrent read-modify-write: every writer that wins is counted once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Go(func() {
			for {
				r, err := s.GetRecord(ctx, "counter", "c")
				var expect int64
				if err == nil {
					expect = r.Version
				} else if !errors.Is(err, store.ErrNotFound) {
					t.Error(err)
					return
				}
				_, err = s.PutRecord(ctx, store.Record{Kind: "counter", Key: "c", Data: []byte("n")}, expect)
				if errors.Is(err, store.ErrConflict) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				wins++
				mu.Unlock()
				return
			}
		})
	}
	wg.Wait()
	if r, err := s.GetRecord(ctx, "counter", "c"); err != nil || r.Version != int64(wins) || wins != 8 {
		t.Fatalf("after 8 concurrent writers: version %d (%v), %d wins; want 8 and 8", r.Version, err, wins)
	}
}
