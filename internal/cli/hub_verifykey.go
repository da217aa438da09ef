package cli

import (
	"fmt"

	"github.com/flotilla/flotilla/internal/hub/source/ociartifact"
)

// parseVerifyKeys reads --verify-key values, NAME=FILE, into files by key name. The files are
// loaded by the hub at start (hub.New), so that a bad one fails the start.
func parseVerifyKeys(values []string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(values))
	for _, v := range values {
		name, file, err := ociartifact.ParseKeyFlag(v)
		if err != nil {
			return nil, usageError{err}
		}
		if prev, dup := out[name]; dup {
			return nil, usageError{fmt.Errorf("--verify-key: key '%s' named twice (%s and %s)", name, prev, file)}
		}
		out[name] = file
	}
	return out, nil
}
