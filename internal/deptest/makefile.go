package deptest

import (
	"fmt"
	"os"
	"strings"
)

// MakefileTags returns the build tags the Makefile at path builds the binaries with (its
// `GOTAGS ?=` line), comma-separated as go build -tags takes them, so that tests and
// benchmarks that build a binary build the one `make build` does.
func MakefileTags(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("build tags: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, "?=")
		if ok && strings.TrimSpace(name) == "GOTAGS" {
			return strings.Join(strings.Fields(value), ","), nil
		}
	}
	return "", fmt.Errorf("build tags: %s has no GOTAGS ?= line", path)
}
