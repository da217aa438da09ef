package browsertest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ScriptErrors starts collecting the script errors of the tab of ctx: uncaught exceptions,
// unhandled promise rejections and console.error calls. Browser log entries (a 401 answered
// to a request, say) are not script errors. Calling the returned func stops collecting and
// returns them, with every message the page logged before the call: it logs a marker
// through the console (console.debug, not an error) and reads up to it, as the browser sends
// the messages in order. Call it before navigating.
func ScriptErrors(ctx context.Context) func() []string {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu      sync.Mutex
		errs    []string
		done    = make(chan struct{})
		flushed = make(chan struct{})
		marker  = "browsertest: read up to here " + strconv.FormatInt(time.Now().UnixNano(), 36)
	)
	messages := chromedp.Console(ctx)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleDebug && m.Text == marker {
				close(flushed)
				return
			}
			if m.Source == "" && (m.IsException() || m.Type == chromedp.ConsoleError) {
				mu.Lock()
				errs = append(errs, m.String()+" ("+m.URL+")")
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		// A tab that is gone or hangs is not waited for: what arrived is returned.
		flush, stop := context.WithTimeout(ctx, 10*time.Second)
		if _, err := chromedp.Run(flush, chromedp.Evaluate[chromedp.Void]("console.debug("+strconv.Quote(marker)+")")); err == nil {
			select {
			case <-flushed:
			case <-flush.Done():
			}
		}
		stop()
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return errs
	}
}

// WatchScriptErrors fails tb, when it ends, if the tab of ctx had a script error (see
// ScriptErrors): an error a user would only see as a view that stops updating.
func WatchScriptErrors(tb testing.TB, ctx context.Context) {
	tb.Helper()
	collect := ScriptErrors(ctx)
	tb.Cleanup(func() {
		if errs := collect(); len(errs) > 0 {
			tb.Errorf("script errors in the page:\n  %s", strings.Join(errs, "\n  "))
		}
	})
}
