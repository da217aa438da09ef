package desired

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/internal/window"
)

// Encode returns the canonical JSON of one cluster's document: assignments sorted by release,
// tombstones in their order (oldest first), map keys sorted (encoding/json does that), nil Vars
// written as {}, no HTML escaping and no trailing newline. Equal documents give identical bytes
// whatever the order of their assignments, so the hub can compare bytes to decide whether a
// cluster's desired state changed. A release assigned twice, or both assigned and tombstoned,
// is an error: the agent could not tell what to do with it.
func Encode(doc Document) ([]byte, error) {
	sorted := make([]Assignment, len(doc.Assignments))
	copy(sorted, doc.Assignments)
	slices.SortFunc(sorted, func(a, b Assignment) int { return strings.Compare(a.Release, b.Release) })
	for i := range sorted {
		if err := checkAssignment(sorted, i); err != nil {
			return nil, err
		}
		if sorted[i].Vars == nil {
			sorted[i].Vars = map[string]string{}
		}
	}
	if err := checkTombstones(sorted, doc.Removed); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Document{Assignments: sorted, Removed: doc.Removed, Gates: doc.Gates, Syncs: doc.Syncs}); err != nil {
		return nil, fmt.Errorf("desired state: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Decode returns the assignments of a document Encode wrote; see DecodeDocument.
func Decode(data []byte) ([]Assignment, error) {
	doc, err := DecodeDocument(data)
	return doc.Assignments, err
}

// DecodeDocument reads what Encode wrote, and the bare list of assignments that hubs before
// tombstones stored (a document without tombstones). Unknown fields are ignored, so that an
// agent older than its hub can still read the fields it knows; a duplicate or unnamed release,
// or one both assigned and tombstoned, is an error. Assignments is never nil.
func DecodeDocument(data []byte) (Document, error) {
	var doc Document
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &doc.Assignments); err != nil {
			return Document{}, fmt.Errorf("desired state: %w", err)
		}
	} else {
		// Assignments is a pointer so that a document without the field is an error, not
		// an empty plan.
		var raw struct {
			Assignments *[]Assignment `json:"assignments"`
			Removed     []Tombstone   `json:"removed"`
			Gates       []window.Gate `json:"gates"`
			Syncs       []SyncRequest `json:"syncs"`
		}
		if err := json.Unmarshal(trimmed, &raw); err != nil {
			return Document{}, fmt.Errorf("desired state: %w", err)
		}
		if raw.Assignments == nil {
			return Document{}, errors.New(`desired state: no "assignments" field`)
		}
		doc.Assignments, doc.Removed, doc.Gates, doc.Syncs = *raw.Assignments, raw.Removed, raw.Gates, raw.Syncs
	}
	if doc.Assignments == nil {
		doc.Assignments = []Assignment{}
	}
	sorted := slices.Clone(doc.Assignments)
	slices.SortFunc(sorted, func(a, b Assignment) int { return strings.Compare(a.Release, b.Release) })
	for i := range sorted {
		if err := checkAssignment(sorted, i); err != nil {
			return Document{}, err
		}
	}
	if err := checkTombstones(sorted, doc.Removed); err != nil {
		return Document{}, err
	}
	for i := range doc.Assignments {
		if doc.Assignments[i].Vars == nil {
			doc.Assignments[i].Vars = map[string]string{}
		}
	}
	return doc, nil
}

// checkTombstones checks tombstones against assignments sorted by release.
func checkTombstones(sorted []Assignment, removed []Tombstone) error {
	seen := make(map[string]bool, len(removed))
	for i, t := range removed {
		switch {
		case t.Release == "":
			return fmt.Errorf("tombstone %d: release name is empty", i)
		case seen[t.Release]:
			return fmt.Errorf("release %q: tombstoned more than once", t.Release)
		}
		seen[t.Release] = true
		if _, found := slices.BinarySearchFunc(sorted, t.Release, func(a Assignment, r string) int { return strings.Compare(a.Release, r) }); found {
			return fmt.Errorf("release %q: both assigned and tombstoned", t.Release)
		}
	}
	return nil
}

// checkAssignment checks the i-th assignment of a list sorted by release.
func checkAssignment(sorted []Assignment, i int) error {
	switch {
	case sorted[i].Release == "":
		return fmt.Errorf("assignment of source %q: release name is empty", sorted[i].Source)
	case i > 0 && sorted[i].Release == sorted[i-1].Release:
		return fmt.Errorf("release %q: assigned more than once", sorted[i].Release)
	}
	return nil
}
