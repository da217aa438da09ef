package browsertest

import (
	"context"
	"encoding/json"
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

// Click clicks the first element matching each CSS selector, in order, in one evaluation in
// the tab, once the first selector matches (within a minute). A page that renders itself
// again (the dashboard's live views) may replace an element between chromedp's finding its
// node and clicking it, and such a click fails ("Could not find node with given id") or goes
// nowhere; no render comes between the statements of one script. An element the click before
// creates (a confirmation button) is found by the next selector.
func Click(tb testing.TB, tab context.Context, sels ...string) {
	tb.Helper()
	list, err := json.Marshal(sels)
	if err != nil {
		tb.Fatal(err)
	}
	js := fmt.Sprintf(`((sels) => { for (const [i, s] of sels.entries()) { const e = document.querySelector(s); if (!e) return i; e.click(); } return -1; })(%s)`, list)
	eventually.Within(tb, time.Minute, func() error {
		missing, err := chromedp.Run(tab, chromedp.Evaluate[int](js))
		switch {
		case err != nil:
			tb.Fatalf("click %q: %v", sels, err)
		case missing == 0:
			return fmt.Errorf("click %q: nothing matches %s yet", sels, sels[0])
		case missing > 0:
			tb.Fatalf("click %q: clicked %s, then nothing matched %s", sels, sels[missing-1], sels[missing])
		}
		return nil
	})
}
