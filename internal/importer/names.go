package importer

import (
	"fmt"
	"strings"
)

// maxName is the longest valid object name (a DNS-1123 label).
const maxName = 63

// sanitize turns s into a valid object name: lower case, characters other than letters,
// digits and "-" become "-", runs of "-" collapse, none at either end, at most 63 bytes. An
// s with nothing usable gives fallback.
func sanitize(s, fallback string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > maxName {
		out = strings.TrimRight(out[:maxName], "-")
	}
	if out == "" {
		return fallback
	}
	return out
}

// labelValue turns s into a valid label value: letters, digits, "-", "_" and "." with an
// alphanumeric character at each end, at most 63 bytes.
func labelValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		if ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	out := b.String()
	if len(out) > maxName {
		out = out[:maxName]
	}
	return strings.Trim(out, "-_.")
}

// names hands out unique object names per kind.
type names struct {
	taken map[string]map[string]bool
}

func newNames() *names { return &names{taken: map[string]map[string]bool{}} }

// assign returns a name for an object of kind derived from want, unique among the names
// handed out for kind. A name that had to be changed is reported against the input object.
func (n *names) assign(kind, want string, rep *Report, o *Object, field string) string {
	base := sanitize(want, strings.ToLower(kind))
	if n.taken[kind] == nil {
		n.taken[kind] = map[string]bool{}
	}
	name := base
	for i := 2; n.taken[kind][name]; i++ {
		suffix := fmt.Sprintf("-%d", i)
		b := base
		if len(b)+len(suffix) > maxName {
			b = strings.TrimRight(b[:maxName-len(suffix)], "-")
		}
		name = b + suffix
	}
	n.taken[kind][name] = true
	if name != want && rep != nil && o != nil {
		msg := fmt.Sprintf("%s name %q is not a valid Flotilla name: it is %q", kind, want, name)
		if base == sanitize(want, "") && name != base {
			msg = fmt.Sprintf("%s name %q is already taken by another imported object: this one is %q", kind, base, name)
		}
		rep.add(Finding{Level: Note, File: o.File, Object: o.ID(), Field: field, Message: msg})
	}
	return name
}
