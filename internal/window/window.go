// Package window decides whether windows, freezes and suspensions hold back a release's
// changes at an instant. It is pure and shared: the agent checks the gates it received
// against its own clock (so they hold while the hub is unreachable), and the hub's rollout
// planner checks the same gates before it starts a cluster.
package window

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // agents run in minimal images: a window's zone must not depend on them

	"github.com/robfig/cron/v3"
)

// Gate holds back some changes of some releases while it is closed: a window (deny: while
// open; allow: whenever no allow window is open), a freeze or a suspension (always closed).
type Gate struct {
	Name     string        `json:"name"`
	Kind     string        `json:"kind"` // KindWindow, KindFreeze, KindSuspend
	Type     string        `json:"type"` // "allow" or "deny"
	Schedule string        `json:"schedule,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	TimeZone string        `json:"timeZone,omitempty"`
	// Releases are names or globs ("team-a-*"); empty: every release.
	Releases []string `json:"releases,omitempty"`
	// Blocks: BlockRevisions, BlockPrune, BlockSelfHeal; empty: revisions only.
	Blocks []string `json:"blocks,omitempty"`
	// Reason and Actor say why and who for a freeze or suspension. A suspension with no
	// Releases is the cluster's (`cluster suspended by ...`), one naming releases is theirs
	// (`release suspended`).
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
}

// Kinds of gates.
const (
	KindWindow  = "window"
	KindFreeze  = "freeze"
	KindSuspend = "suspend"
)

// What a gate may block (the values of v1alpha1.WindowSpec.Blocks).
const (
	BlockRevisions = "revisions"
	BlockPrune     = "prune"
	BlockSelfHeal  = "selfHeal"
)

// Verdict is what the gates hold back for one release at one instant.
type Verdict struct {
	Revisions, Prune, SelfHeal bool
	// Reason says why, for status: `window "business-hours" opens 22:00 Europe/Berlin`,
	// `frozen by token:admin: incident 4711`, `cluster suspended`; "" when nothing is held.
	Reason string
	// Next is the next instant at which the verdict may change by time alone (a window
	// opens or closes); zero when no window is involved.
	Next time.Time
}

// Blocked reports whether anything is held back.
func (v Verdict) Blocked() bool { return v.Revisions || v.Prune || v.SelfHeal }

// Evaluate returns what gates hold back for release at now.
//
// A gate covers the release when its Releases is empty or one of its names or globs
// (path.Match) matches. Freezes and suspensions hold back what they block always. A deny
// window holds back what it blocks during [start, start+duration) of each opening of its
// schedule in its time zone (duration is elapsed time, so a window across a clock change is
// as long as it says). Allow windows: when any allow window covering the release blocks a
// kind of change, that change may land only while one of them is open. A gate that fails
// Check holds back everything for the releases it may cover: a gate is never read as open
// because it cannot be read.
func Evaluate(gates []Gate, release string, now time.Time) Verdict {
	var v Verdict
	var reasons [4][]string // freezes and suspensions, invalid gates, deny windows, allow windows
	type allowState struct {
		covered, open bool
		opens         time.Time // the soonest opening among the closed ones
		reason        string
	}
	var allow [3]allowState
	for _, g := range gates {
		if !covers(g, release) {
			continue
		}
		o, err := compile(g)
		if err != nil {
			v.Revisions, v.Prune, v.SelfHeal = true, true, true
			reasons[1] = append(reasons[1], fmt.Sprintf("%v; it holds everything", err))
			continue
		}
		blocks := blocked(g)
		switch g.Kind {
		case KindFreeze, KindSuspend:
			v.hold(blocks)
			reasons[0] = append(reasons[0], holdReason(g))
		case KindWindow:
			open, next := o.state(g.Duration, now)
			v.Next = earliest(v.Next, next.In(now.Location()))
			if g.Type == TypeDeny {
				if open {
					v.hold(blocks)
					reasons[2] = append(reasons[2], fmt.Sprintf("window %q closes %s", g.Name, when(next, now, o.loc, zoneName(g))))
				}
				continue
			}
			for i, b := range blocks {
				if !b {
					continue
				}
				a := &allow[i]
				a.covered = true
				if open {
					a.open = true
					continue
				}
				if a.reason == "" || (!next.IsZero() && (a.opens.IsZero() || next.Before(a.opens))) {
					a.opens = next
					if next.IsZero() {
						a.reason = fmt.Sprintf("window %q does not open again", g.Name)
					} else {
						a.reason = fmt.Sprintf("window %q opens %s", g.Name, when(next, now, o.loc, zoneName(g)))
					}
				}
			}
		}
	}
	var held [3]bool
	for i, a := range allow {
		if a.covered && !a.open {
			held[i] = true
			reasons[3] = append(reasons[3], a.reason)
		}
	}
	v.hold(held)
	var all []string
	seen := map[string]bool{}
	for _, rs := range reasons {
		for _, r := range rs {
			if !seen[r] {
				seen[r] = true
				all = append(all, r)
			}
		}
	}
	v.Reason = strings.Join(all, "; ")
	return v
}

// Window types.
const (
	TypeAllow = "allow"
	TypeDeny  = "deny"
)

// Bounds on a gate's fields: gates reach agents from the hub and are checked again there.
const (
	maxNameLen     = 253
	maxScheduleLen = 256
	maxZoneLen     = 64
	maxReleases    = 256
	maxTextLen     = 1024
	// MaxDuration bounds a window's duration; a deny window for all of December fits.
	MaxDuration = 366 * 24 * time.Hour
)

// Check returns an error naming the field when g's schedule, time zone, type, kind or blocks
// are not valid; the fleet's validation and the agent (for a gate from a newer hub) use it.
func Check(g Gate) error {
	_, err := compile(g)
	return err
}

// compile checks g and, for a window, returns its openings.
func compile(g Gate) (occurrences, error) {
	var o occurrences
	if g.Name == "" {
		return o, fmt.Errorf("gate: name is empty")
	}
	if len(g.Name) > maxNameLen {
		return o, fmt.Errorf("gate %q...: name is longer than %d bytes", g.Name[:32], maxNameLen)
	}
	if len(g.Releases) > maxReleases {
		return o, fmt.Errorf("%s: releases has %d entries, more than %d", describe(g), len(g.Releases), maxReleases)
	}
	for _, r := range g.Releases {
		if r == "" || len(r) > maxNameLen {
			return o, fmt.Errorf("%s: releases entry %q must be 1 to %d bytes", describe(g), clip(r), maxNameLen)
		}
		if _, err := path.Match(r, ""); err != nil {
			return o, fmt.Errorf("%s: releases entry %q is not a valid glob: %w", describe(g), r, err)
		}
	}
	for _, b := range g.Blocks {
		if b != BlockRevisions && b != BlockPrune && b != BlockSelfHeal {
			return o, fmt.Errorf("%s: blocks entry %q is not one of %s, %s, %s", describe(g), clip(b), BlockRevisions, BlockPrune, BlockSelfHeal)
		}
	}
	if len(g.Reason) > maxTextLen || len(g.Actor) > maxTextLen {
		return o, fmt.Errorf("%s: reason or actor is longer than %d bytes", describe(g), maxTextLen)
	}
	switch g.Kind {
	case KindFreeze, KindSuspend:
		if g.Type != "" && g.Type != TypeDeny {
			return o, fmt.Errorf("%s: type %q must be %q or empty for a %s", describe(g), clip(g.Type), TypeDeny, g.Kind)
		}
		if g.Schedule != "" || g.Duration != 0 || g.TimeZone != "" {
			return o, fmt.Errorf("%s: schedule, duration and timeZone are for windows, not a %s", describe(g), g.Kind)
		}
		return o, nil
	case KindWindow:
	default:
		return o, fmt.Errorf("%s: kind %q is not one of %s, %s, %s", describe(g), clip(g.Kind), KindWindow, KindFreeze, KindSuspend)
	}
	if g.Type != TypeAllow && g.Type != TypeDeny {
		return o, fmt.Errorf("%s: type %q is not %q or %q", describe(g), clip(g.Type), TypeAllow, TypeDeny)
	}
	if g.Duration <= 0 || g.Duration > MaxDuration {
		return o, fmt.Errorf("%s: duration %s must be more than 0 and at most %s", describe(g), g.Duration, MaxDuration)
	}
	loc, err := location(g.TimeZone)
	if err != nil {
		return o, fmt.Errorf("%s: timeZone %q: %w", describe(g), clip(g.TimeZone), err)
	}
	sched, err := parseSchedule(g.Schedule)
	if err != nil {
		return o, fmt.Errorf("%s: schedule %q: %w", describe(g), clip(g.Schedule), err)
	}
	o = occurrences{sched: sched, loc: loc}
	// A schedule that names a day that does not exist (February 30) never opens: an allow
	// window would then hold forever, a deny window never; both are mistakes to say.
	if o.next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return o, fmt.Errorf("%s: schedule %q never occurs", describe(g), g.Schedule)
	}
	return o, nil
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// parseSchedule parses a five-field cron expression.
func parseSchedule(s string) (sched cron.Schedule, err error) {
	if s == "" {
		return nil, fmt.Errorf("is empty; want a five-field cron expression such as \"0 22 * * *\"")
	}
	if len(s) > maxScheduleLen {
		return nil, fmt.Errorf("is longer than %d bytes", maxScheduleLen)
	}
	// The time zone is the gate's own field; the parser's TZ= prefix would override it (and
	// panics on "TZ=x" without a space).
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "TZ=") || strings.HasPrefix(t, "CRON_TZ=") {
		return nil, fmt.Errorf("must not carry a time zone; use timeZone")
	}
	if n := len(strings.Fields(s)); n != 5 {
		return nil, fmt.Errorf("has %d fields, want 5 (minute hour day-of-month month day-of-week)", n)
	}
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("is not a valid cron expression (%v)", r)
		}
	}()
	return cronParser.Parse(s)
}

// location loads an IANA time zone; empty is UTC. "Local" is refused: it would make a
// window depend on the machine that checks it.
func location(name string) (*time.Location, error) {
	if len(name) > maxZoneLen {
		return nil, fmt.Errorf("is longer than %d bytes", maxZoneLen)
	}
	if name == "Local" {
		return nil, fmt.Errorf("is not an IANA time zone name (such as Europe/Berlin)")
	}
	zones.Lock()
	defer zones.Unlock()
	if loc, ok := zones.m[name]; ok {
		return loc, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("is not an IANA time zone name (such as Europe/Berlin): %w", err)
	}
	if zones.m == nil || len(zones.m) >= maxZones {
		zones.m = map[string]*time.Location{}
	}
	zones.m[name] = loc
	return loc, nil
}

// zones caches loaded time zones: loading one reads and parses its file, a quarter of an
// Evaluate otherwise, and the hub evaluates gates for every cluster. A Location never
// changes once loaded, so sharing one is safe; the cache is bounded by emptying it.
var zones struct {
	sync.Mutex
	m map[string]*time.Location
}

const maxZones = 64

func (v *Verdict) hold(b [3]bool) {
	v.Revisions = v.Revisions || b[0]
	v.Prune = v.Prune || b[1]
	v.SelfHeal = v.SelfHeal || b[2]
}

// blocked returns what g holds back: revisions, prune, selfHeal; revisions by default.
func blocked(g Gate) [3]bool {
	if len(g.Blocks) == 0 {
		return [3]bool{true, false, false}
	}
	var b [3]bool
	for _, x := range g.Blocks {
		switch x {
		case BlockRevisions:
			b[0] = true
		case BlockPrune:
			b[1] = true
		case BlockSelfHeal:
			b[2] = true
		}
	}
	return b
}

// covers reports whether g applies to release. A malformed glob covers every release, so an
// invalid gate holds back too much rather than too little.
func covers(g Gate, release string) bool {
	if len(g.Releases) == 0 {
		return true
	}
	for _, r := range g.Releases {
		ok, err := path.Match(r, release)
		if ok || err != nil {
			return true
		}
	}
	return false
}

func holdReason(g Gate) string {
	var b strings.Builder
	switch {
	case g.Kind == KindFreeze:
		b.WriteString("frozen")
	case len(g.Releases) == 0:
		b.WriteString("cluster suspended")
	default:
		b.WriteString("release suspended")
	}
	if g.Actor != "" {
		b.WriteString(" by " + g.Actor)
	}
	if g.Reason != "" {
		b.WriteString(": " + g.Reason)
	}
	return b.String()
}

func describe(g Gate) string {
	kind := g.Kind
	switch kind {
	case KindWindow, KindFreeze, KindSuspend:
	default:
		kind = "gate"
	}
	return fmt.Sprintf("%s %q", kind, clip(g.Name))
}

// clip shortens a hostile value quoted in an error.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return strings.ToValidUTF8(s[:64], "") + "..."
}

func zoneName(g Gate) string {
	if g.TimeZone == "" {
		return "UTC"
	}
	return g.TimeZone
}

// when formats t for a reason, in the window's zone: the time of day within a day, with the
// weekday within a week, with the date beyond.
func when(t, now time.Time, loc *time.Location, zone string) string {
	l := t.In(loc)
	switch d := t.Sub(now); {
	case d < 24*time.Hour:
		return l.Format("15:04") + " " + zone
	case d < 7*24*time.Hour:
		return l.Format("Mon 15:04") + " " + zone
	default:
		return l.Format("2006-01-02 15:04") + " " + zone
	}
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
