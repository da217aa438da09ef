package window

import (
	"time"

	"github.com/robfig/cron/v3"
)

// occurrences are the instants at which a window opens, in its time zone.
//
// The cron schedule is matched against wall-clock readings, not instants: robfig/cron steps
// through instants and so skips an opening whose wall time the clock jumps over (02:30 on
// the spring-forward night) and opens twice in a repeated hour (autumn). We instead run
// the schedule on naive wall times (a UTC reading of the local fields, where every reading
// exists once) and map each reading to one instant:
//   - a reading the clock skips opens at the instant of the jump (as Vixie cron runs it);
//   - a reading the clock shows twice opens at its first showing, once.
type occurrences struct {
	sched cron.Schedule
	loc   *time.Location
}

// wall is t's local reading as a UTC time with the same fields.
func (o occurrences) wall(t time.Time) time.Time {
	l := t.In(o.loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

// instant maps a wall reading to the instant it denotes (see the type's comment).
func (o occurrences) instant(w time.Time) time.Time {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, o.loc)
	if got := o.wall(t); !got.Equal(w) {
		// The clock skips w: open when it jumps, which is where the zone t is in starts
		// (Go placed w after the jump) or ends (before it).
		start, end := t.ZoneBounds()
		if got.After(w) && !start.IsZero() {
			return start
		}
		if !end.IsZero() {
			return end
		}
		return t
	}
	// A reading shown twice: the first showing is one zone-offset change earlier.
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	_, before := start.Add(-time.Second).Zone()
	_, now := t.Zone()
	if before > now {
		if e := t.Add(-time.Duration(before-now) * time.Second); e.Before(start) && o.wall(e).Equal(w) {
			return e
		}
	}
	return t
}

// next returns the first opening strictly after t, or the zero time when there is none within
// the cron library's five-year horizon.
func (o occurrences) next(t time.Time) time.Time {
	w := o.wall(t)
	// Bounded: a wall reading maps to an instant at or before t only around a zone change
	// (a repeated hour's second showing, or several readings inside a skipped hour).
	for range 1000 {
		w = o.sched.Next(w)
		if w.IsZero() {
			return time.Time{}
		}
		if s := o.instant(w); s.After(t) {
			return s
		}
	}
	return time.Time{}
}

// latest returns the last opening in (lo, hi], or the zero time when there is none.
func (o occurrences) latest(lo, hi time.Time) time.Time {
	n := o.next(lo)
	if n.IsZero() || n.After(hi) {
		return time.Time{}
	}
	// Most windows open a few times at most within their duration: step through them.
	for range 16 {
		m := o.next(n)
		if m.IsZero() || m.After(hi) {
			return n
		}
		n = m
	}
	if m := o.next(n); m.IsZero() || m.After(hi) {
		return n
	}
	// A dense schedule (every minute of the working day, open for eight hours): next(x) <= hi
	// holds for x below the last opening and fails from it on, so a binary search to the
	// second finds it in a few dozen steps (openings fall on whole seconds).
	a, b := n, hi
	for b.Sub(a) > time.Second {
		mid := a.Add(b.Sub(a) / 2)
		if m := o.next(mid); !m.IsZero() && !m.After(hi) {
			a = mid
		} else {
			b = mid
		}
	}
	return o.next(a)
}

// maxExtensions bounds how far ahead the close of overlapping openings is followed: a window
// whose openings keep overlapping (every hour, open for two) reports the close it reached,
// and the caller evaluates again then.
const maxExtensions = 64

// state reports whether the window is open at now, and the next instant it opens (when
// closed) or closes (when open; the end of the run of overlapping openings). next is zero
// when the window never opens again.
func (o occurrences) state(d time.Duration, now time.Time) (open bool, next time.Time) {
	last := o.latest(now.Add(-d), now)
	if last.IsZero() {
		return false, o.next(now)
	}
	end := last.Add(d)
	for range maxExtensions {
		s := o.latest(last, end.Add(-time.Nanosecond))
		if s.IsZero() {
			break
		}
		last, end = s, s.Add(d)
	}
	return true, end
}
