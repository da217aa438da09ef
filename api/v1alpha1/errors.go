package v1alpha1

import (
	"strconv"
	"strings"
)

// Problem is one thing wrong with a fleet configuration.
type Problem struct {
	// File is the file the object came from, as given to Parse or found by LoadDir; empty for
	// a fleet built in code.
	File string
	// Object is "Kind/name" ("Release/baseline"), or "document N" when the document has no
	// usable kind or name.
	Object string
	// Field is the path of the field concerned ("spec.targets[0].selector.matchLabels[env]");
	// empty when the problem concerns the whole object or document.
	Field   string
	Message string
	// Line is the line of File where the object's document starts; 0 when unknown.
	Line int
}

// String reads "file line N: object: field: message", leaving out the parts that are empty.
func (p Problem) String() string {
	var b strings.Builder
	file := p.File
	if file != "" && p.Line > 0 {
		file += " line " + strconv.Itoa(p.Line)
	}
	for _, s := range []string{file, p.Object, p.Field} {
		if s != "" {
			b.WriteString(s)
			b.WriteString(": ")
		}
	}
	b.WriteString(p.Message)
	return b.String()
}

// InvalidError lists every problem found in a fleet configuration, in file and document
// order, so that one run shows everything to fix.
type InvalidError struct {
	Problems []Problem
}

// Error is one problem per line.
func (e *InvalidError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
