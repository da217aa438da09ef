package schedule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Encode returns the canonical JSON of one cluster's assignments: sorted by release, map keys
// sorted (encoding/json does that), nil Vars written as {}, no HTML escaping and no trailing
// newline. Equal sets of assignments give identical bytes whatever their order, so the hub can
// compare bytes to decide whether a cluster's desired state changed. A release assigned twice
// is an error: the agent could not tell which one to apply.
func Encode(assignments []Assignment) ([]byte, error) {
	sorted := make([]Assignment, len(assignments))
	copy(sorted, assignments)
	slices.SortFunc(sorted, func(a, b Assignment) int { return strings.Compare(a.Release, b.Release) })
	for i := range sorted {
		if err := checkAssignment(sorted, i); err != nil {
			return nil, err
		}
		if sorted[i].Vars == nil {
			sorted[i].Vars = map[string]string{}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sorted); err != nil {
		return nil, fmt.Errorf("assignments: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Decode reads what Encode wrote. Unknown fields are ignored, so that an agent older than its
// hub can still read the fields it knows; a duplicate or unnamed release is an error.
func Decode(data []byte) ([]Assignment, error) {
	var out []Assignment
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("assignments: %w", err)
	}
	if out == nil {
		out = []Assignment{}
	}
	sorted := slices.Clone(out)
	slices.SortFunc(sorted, func(a, b Assignment) int { return strings.Compare(a.Release, b.Release) })
	for i := range sorted {
		if err := checkAssignment(sorted, i); err != nil {
			return nil, err
		}
	}
	for i := range out {
		if out[i].Vars == nil {
			out[i].Vars = map[string]string{}
		}
	}
	return out, nil
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
