package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// choice is a flag value limited to a few words, such as -o text|json.
type choice struct {
	value   string
	allowed []string
}

// newChoice returns a choice set to the first allowed word.
func newChoice(allowed ...string) *choice { return &choice{value: allowed[0], allowed: allowed} }

func (c *choice) String() string { return c.value }
func (c *choice) Type() string   { return strings.Join(c.allowed, "|") }
func (c *choice) Set(v string) error {
	if !slices.Contains(c.allowed, v) {
		return fmt.Errorf("want %s, got %q", strings.Join(c.allowed, " or "), v)
	}
	c.value = v
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
