package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// watchStatus prints the status table, then, like `kubectl get -w`, only the lines that
// changed, each time they change, asking the hub every interval until ctx ends (Ctrl-C),
// which is not an error. A failed request is said once on stderr and the watch goes on.
func watchStatus(ctx context.Context, s streams, c *hubclient.Client, f hubclient.StatusFilter, interval time.Duration) error {
	var prev, lastErr string
	for {
		v, err := c.FilteredStatus(ctx, f)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil:
			if msg := err.Error(); msg != lastErr {
				fmt.Fprintln(s.errOut, "watch:", msg)
				lastErr = msg
			}
		default:
			lastErr = ""
			var b bytes.Buffer
			printStatus(&b, v, f, true)
			next := b.String()
			if prev == "" {
				_, _ = io.WriteString(s.out, next) // a terminal: a failed write has nobody to tell
			} else {
				_, _ = io.WriteString(s.out, changedLines(prev, next)) // the same
			}
			prev = next
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// changedLines returns the lines of next that prev does not have, in order: the rows that
// changed, and the header again if the columns moved.
func changedLines(prev, next string) string {
	seen := map[string]bool{}
	for _, l := range strings.Split(prev, "\n") {
		seen[l] = true
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(next, "\n"), "\n") {
		if !seen[l] {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
