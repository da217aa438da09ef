package browsertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flotilla/flotilla/internal/eventually"
)

// WaitTrue waits until the JavaScript expression is true in the tab, failing the test with
// what was awaited and the last evaluation's error or value once timeout has passed.
func WaitTrue(tb testing.TB, tab context.Context, timeout time.Duration, what, expr string) {
	tb.Helper()
	eventually.Within(tb, timeout, func() error {
		ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](expr))
		if err != nil {
			return fmt.Errorf("%s: evaluating %s: %w", what, expr, err)
		}
		if !ok {
			return fmt.Errorf("%s: %s is still false", what, expr)
		}
		return nil
	})
}

// WaitText waits until the text of the first element matching the CSS selector contains want.
func WaitText(tb testing.TB, tab context.Context, timeout time.Duration, sel, want string) {
	tb.Helper()
	eventually.Within(tb, timeout, func() error {
		js := fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ''`, sel)
		got, err := chromedp.Run(tab, chromedp.Evaluate[string](js))
		if err != nil {
			return fmt.Errorf("%s: %w", sel, err)
		}
		if !strings.Contains(got, want) {
			return fmt.Errorf("%s: %q, want it to contain %q", sel, got, want)
		}
		return nil
	})
}
