package cli

import (
	"encoding/json"
	"fmt"
	"io"
)

// outputFormat is the value of a command's -o flag.
type outputFormat string

const (
	outputText outputFormat = "text"
	outputJSON outputFormat = "json"
)

func (f *outputFormat) String() string { return string(*f) }
func (f *outputFormat) Type() string   { return "format" }
func (f *outputFormat) Set(v string) error {
	switch outputFormat(v) {
	case outputText, outputJSON:
		*f = outputFormat(v)
		return nil
	}
	return fmt.Errorf("want text or json, got %q", v)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
