package importer

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Level says how much a finding matters.
type Level string

const (
	// Note: converted; the line says how, or what differs slightly.
	Note Level = "note"
	// Action: converted, and the user must do something before it works (label clusters,
	// configure credentials).
	Action Level = "action"
	// LeftOut: not converted. The command exits with code 3 when any finding is LeftOut.
	LeftOut Level = "left-out"
)

// Finding is one line of the report.
type Finding struct {
	Level Level `json:"level"`
	// File is the input file, Object the input object ("Application/argocd/guestbook") and
	// Field the field path in it ("spec.syncPolicy.retry"), when they apply.
	File   string `json:"file,omitempty"`
	Object string `json:"object,omitempty"`
	Field  string `json:"field,omitempty"`
	// Message says what happened, Do what the user should do.
	Message string `json:"message"`
	Do      string `json:"do,omitempty"`
}

// Report collects findings.
type Report struct {
	Findings []Finding
}

func (r *Report) add(f Finding) { r.Findings = append(r.Findings, f) }

// LeftOut reports whether anything was not converted.
func (r *Report) LeftOut() bool {
	return slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Level == LeftOut })
}

// Count returns how many findings have level l.
func (r *Report) Count(l Level) int {
	n := 0
	for _, f := range r.Findings {
		if f.Level == l {
			n++
		}
	}
	return n
}

// sort orders findings by file, object, field and message, so that the same input always
// gives the same report; duplicates are dropped.
func (r *Report) sort() {
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return cmp.Or(strings.Compare(a.File, b.File), strings.Compare(a.Object, b.Object),
			strings.Compare(a.Field, b.Field), strings.Compare(a.Message, b.Message))
	})
	r.Findings = slices.Compact(r.Findings)
}

// WriteText writes one finding per line: "LEVEL FILE OBJECT FIELD: MESSAGE; do: ...".
func (r *Report) WriteText(w io.Writer) error {
	for _, f := range r.Findings {
		var b strings.Builder
		fmt.Fprintf(&b, "%-8s ", f.Level)
		if f.File != "" {
			b.WriteString(f.File + ": ")
		}
		if f.Object != "" {
			b.WriteString(f.Object)
			if f.Field != "" {
				b.WriteString(" " + f.Field)
			}
			b.WriteString(": ")
		}
		b.WriteString(f.Message)
		if f.Do != "" {
			b.WriteString("\n         -> " + f.Do)
		}
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the findings as a JSON array (an empty one when there are none).
func (r *Report) WriteJSON(w io.Writer) error {
	list := r.Findings
	if list == nil {
		list = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(list)
}
