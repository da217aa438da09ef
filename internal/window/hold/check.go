package hold

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
)

// Bounds of what a freeze or suspension request may carry.
const (
	// MaxReason is the longest reason in bytes; window.Check refuses a longer one.
	MaxReason = 1024
	// MaxSelectorKeys is the most labels a freeze's selector may name.
	MaxSelectorKeys = 32
)

// CheckReason trims a reason and refuses one too long, or with a line break or another
// control character: it is shown on one status line.
func CheckReason(reason string, required bool) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "" && required:
		return "", errors.New("a reason is required: it is shown in the status of every release held back, and recorded in the audit trail")
	case len(reason) > MaxReason:
		return "", fmt.Errorf("reason of %d bytes: at most %d", len(reason), MaxReason)
	case strings.ContainsFunc(reason, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", errors.New("the reason has a line break or another control character: it must fit on one status line")
	}
	return reason, nil
}

// CheckSelector refuses a selector no cluster label could match.
func CheckSelector(sel map[string]string) error {
	if len(sel) > MaxSelectorKeys {
		return fmt.Errorf("selector of %d labels: at most %d", len(sel), MaxSelectorKeys)
	}
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		if msgs := content.IsLabelKey(k); len(msgs) > 0 {
			return fmt.Errorf("selector: label key %q is invalid: %s", k, strings.Join(msgs, "; "))
		}
		if msgs := content.IsLabelValue(sel[k]); len(msgs) > 0 {
			return fmt.Errorf("selector: label value %q of %s is invalid: %s", sel[k], k, strings.Join(msgs, "; "))
		}
	}
	return nil
}
