package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/internal/hub/store"
)

// The fake store's records and statuses: what rollouts, gates and syncs read, kept in memory
// with the store contract's versioning.

func (s *fakeStore) ListStatuses(context.Context) ([]store.AssignmentStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.AssignmentStatus(nil), s.statuses...), nil
}

func (s *fakeStore) GetRecord(_ context.Context, kind, key string) (store.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[kind+"/"+key]
	if !ok {
		return store.Record{}, fmt.Errorf("%s %q: %w", kind, key, store.ErrNotFound)
	}
	return r, nil
}

func (s *fakeStore) ListRecords(_ context.Context, kind string) ([]store.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Record
	for _, r := range s.records {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b store.Record) int { return strings.Compare(a.Key, b.Key) }) // as the store orders them
	return out, nil
}

func (s *fakeStore) PutRecord(_ context.Context, r store.Record, expect int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = map[string]store.Record{}
	}
	old := s.records[r.Kind+"/"+r.Key]
	if expect != store.AnyVersion && old.Version != expect {
		return 0, fmt.Errorf("%s %q: %w", r.Kind, r.Key, store.ErrConflict)
	}
	r.Version = old.Version + 1
	s.records[r.Kind+"/"+r.Key] = r
	return r.Version, nil
}

func (s *fakeStore) DeleteRecord(_ context.Context, kind, key string, expect int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records[kind+"/"+key]
	if !ok {
		return fmt.Errorf("%s %q: %w", kind, key, store.ErrNotFound)
	}
	if expect != store.AnyVersion && old.Version != expect {
		return fmt.Errorf("%s %q: %w", kind, key, store.ErrConflict)
	}
	delete(s.records, kind+"/"+key)
	return nil
}
