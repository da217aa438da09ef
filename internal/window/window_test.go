package window

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func deny(name, schedule string, d time.Duration, tz string, blocks ...string) Gate {
	return Gate{Name: name, Kind: KindWindow, Type: TypeDeny, Schedule: schedule, Duration: d, TimeZone: tz, Blocks: blocks}
}

func allow(name, schedule string, d time.Duration, tz string, blocks ...string) Gate {
	return Gate{Name: name, Kind: KindWindow, Type: TypeAllow, Schedule: schedule, Duration: d, TimeZone: tz, Blocks: blocks}
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	berlin := "Europe/Berlin"
	business := allow("business-hours", "0 22 * * *", 4*time.Hour, berlin)
	weekend := deny("weekend", "0 18 * * 5", 60*time.Hour, berlin) // Friday 18:00 to Monday 06:00
	tests := []struct {
		name    string
		gates   []Gate
		release string
		now     string
		want    Verdict
	}{
		{name: "no gates hold nothing", now: "2026-07-01T12:00:00Z", want: Verdict{}},
		{
			name: "a closed allow window holds revisions until it opens", gates: []Gate{business}, now: "2026-07-01T12:00:00Z",
			want: Verdict{Revisions: true, Reason: `window "business-hours" opens 22:00 Europe/Berlin`, Next: at("2026-07-01T20:00:00Z")},
		},
		{
			name: "an open allow window lets revisions through until it closes", gates: []Gate{business}, now: "2026-07-01T21:00:00Z",
			want: Verdict{Next: at("2026-07-02T00:00:00Z")},
		},
		{
			name: "an allow window opens exactly at its start", gates: []Gate{business}, now: "2026-07-01T20:00:00Z",
			want: Verdict{Next: at("2026-07-02T00:00:00Z")},
		},
		{
			name: "an allow window is closed exactly at start plus duration", gates: []Gate{business}, now: "2026-07-02T00:00:00Z",
			want: Verdict{Revisions: true, Reason: `window "business-hours" opens 22:00 Europe/Berlin`, Next: at("2026-07-02T20:00:00Z")},
		},
		{
			name: "an open deny window says when it closes, with the weekday beyond a day", gates: []Gate{weekend}, now: "2026-07-04T10:00:00Z", // Saturday
			want: Verdict{Revisions: true, Reason: `window "weekend" closes Mon 06:00 Europe/Berlin`, Next: at("2026-07-06T04:00:00Z")},
		},
		{
			name: "a closed deny window holds nothing and says when it opens", gates: []Gate{weekend}, now: "2026-07-06T04:00:00Z",
			want: Verdict{Next: at("2026-07-10T16:00:00Z")},
		},
		{
			name: "a deny window's opening the clock skips (spring forward) opens at the jump",
			// 02:30 does not exist in Berlin on 2026-03-29: clocks go from 02:00 CET to 03:00 CEST (01:00Z).
			gates: []Gate{deny("night", "30 2 * * *", time.Hour, berlin)}, now: "2026-03-29T01:10:00Z",
			want: Verdict{Revisions: true, Reason: `window "night" closes 04:00 Europe/Berlin`, Next: at("2026-03-29T02:00:00Z")},
		},
		{
			name:  "before the spring-forward jump the skipped opening is next",
			gates: []Gate{deny("night", "30 2 * * *", time.Hour, berlin)}, now: "2026-03-29T00:30:00Z",
			want: Verdict{Next: at("2026-03-29T01:00:00Z")},
		},
		{
			name: "a window's duration is elapsed time across the spring-forward change",
			// Opens 22:00 CET (21:00Z) on the 28th; 8 hours later is 05:00Z, 07:00 CEST.
			gates: []Gate{deny("overnight", "0 22 * * *", 8*time.Hour, berlin)}, now: "2026-03-29T04:00:00Z",
			want: Verdict{Revisions: true, Reason: `window "overnight" closes 07:00 Europe/Berlin`, Next: at("2026-03-29T05:00:00Z")},
		},
		{
			name: "an opening in the repeated hour (fall back) opens once, at its first showing",
			// 02:30 CEST is 00:30Z; the second 02:30 (CET, 01:30Z) does not open the window again.
			gates: []Gate{deny("night", "30 2 * * *", 30*time.Minute, berlin)}, now: "2026-10-25T01:40:00Z",
			want: Verdict{Next: at("2026-10-26T01:30:00Z")},
		},
		{
			name:  "the first showing of the repeated hour opens the window",
			gates: []Gate{deny("night", "30 2 * * *", 30*time.Minute, berlin)}, now: "2026-10-25T00:40:00Z",
			// 30 minutes after 02:30 CEST is 02:00 CET: the clock went back meanwhile.
			want: Verdict{Revisions: true, Reason: `window "night" closes 02:00 Europe/Berlin`, Next: at("2026-10-25T01:00:00Z")},
		},
		{
			name: "a zone with negative offset falls back too (New York, repeated 01:30)",
			// 01:30 EDT is 05:30Z; 01:30 EST (06:30Z) is the repeat.
			gates: []Gate{deny("night", "30 1 * * *", 20*time.Minute, "America/New_York")}, now: "2026-11-01T06:35:00Z",
			want: Verdict{Next: at("2026-11-02T06:30:00Z")},
		},
		{
			name:  "overlapping openings of one window close when the last one ends",
			gates: []Gate{deny("morning", "0 9,10 * * *", 90*time.Minute, "")}, now: "2026-07-01T09:30:00Z",
			want: Verdict{Revisions: true, Reason: `window "morning" closes 11:30 UTC`, Next: at("2026-07-01T11:30:00Z")},
		},
		{
			name:  "two overlapping deny windows are both named; next is the earlier close",
			gates: []Gate{deny("a", "0 9 * * *", 2*time.Hour, ""), deny("b", "0 10 * * *", 2*time.Hour, "")}, now: "2026-07-01T10:30:00Z",
			want: Verdict{Revisions: true, Reason: `window "a" closes 11:00 UTC; window "b" closes 12:00 UTC`, Next: at("2026-07-01T11:00:00Z")},
		},
		{
			name:  "a deny window holds inside an open allow window",
			gates: []Gate{business, deny("backup", "0 23 * * *", 30*time.Minute, berlin)}, now: "2026-07-01T21:10:00Z",
			want: Verdict{Revisions: true, Reason: `window "backup" closes 23:30 Europe/Berlin`, Next: at("2026-07-01T21:30:00Z")},
		},
		{
			name:  "an allow window with a closed deny window lets changes through",
			gates: []Gate{business, deny("backup", "0 23 * * *", 30*time.Minute, berlin)}, now: "2026-07-01T20:10:00Z",
			want: Verdict{Next: at("2026-07-01T21:00:00Z")},
		},
		{
			name:  "one open allow window of two is enough",
			gates: []Gate{business, allow("lunch", "0 12 * * *", time.Hour, "")}, now: "2026-07-01T12:30:00Z",
			want: Verdict{Next: at("2026-07-01T13:00:00Z")},
		},
		{
			name:  "with every allow window closed the reason names the one that opens first",
			gates: []Gate{business, allow("lunch", "0 12 * * *", time.Hour, "")}, now: "2026-07-01T14:00:00Z",
			want: Verdict{Revisions: true, Reason: `window "business-hours" opens 22:00 Europe/Berlin`, Next: at("2026-07-01T20:00:00Z")},
		},
		{
			name:  "an allow window for prune only does not hold revisions",
			gates: []Gate{allow("prune-time", "0 3 * * 0", time.Hour, "", BlockPrune)}, now: "2026-07-01T14:00:00Z", // Wednesday
			want: Verdict{Prune: true, Reason: `window "prune-time" opens Sun 03:00 UTC`, Next: at("2026-07-05T03:00:00Z")},
		},
		{
			name:  "a deny window blocking prune and self-heal leaves revisions free",
			gates: []Gate{deny("quiet", "0 0 * * *", 24*time.Hour, "", BlockPrune, BlockSelfHeal)}, now: "2026-07-01T14:00:00Z",
			want: Verdict{Prune: true, SelfHeal: true, Reason: `window "quiet" closes 00:00 UTC`, Next: at("2026-07-02T00:00:00Z")},
		},
		{
			name: "a glob covers matching releases", gates: []Gate{deny("team-a", "0 0 * * *", 24*time.Hour, "")}, release: "team-a-web",
			now:  "2026-07-01T14:00:00Z",
			want: Verdict{Revisions: true, Reason: `window "team-a" closes 00:00 UTC`, Next: at("2026-07-02T00:00:00Z")},
		},
		{
			name:    "a glob does not cover other releases",
			gates:   []Gate{{Name: "team-a", Kind: KindWindow, Type: TypeDeny, Schedule: "0 0 * * *", Duration: 24 * time.Hour, Releases: []string{"team-a-*", "db"}}},
			release: "team-b-web", now: "2026-07-01T14:00:00Z", want: Verdict{},
		},
		{
			name:    "a window names releases exactly too",
			gates:   []Gate{{Name: "db-window", Kind: KindWindow, Type: TypeAllow, Schedule: "0 2 * * *", Duration: time.Hour, Releases: []string{"team-a-*", "db"}}},
			release: "db", now: "2026-07-01T14:00:00Z",
			want: Verdict{Revisions: true, Reason: `window "db-window" opens 02:00 UTC`, Next: at("2026-07-02T02:00:00Z")},
		},
		{
			name:    "a freeze holds revisions and names who and why",
			gates:   []Gate{{Name: "f1", Kind: KindFreeze, Type: TypeDeny, Reason: "incident 4711", Actor: "token:admin"}},
			release: "web", now: "2026-07-01T14:00:00Z",
			want: Verdict{Revisions: true, Reason: "frozen by token:admin: incident 4711"},
		},
		{
			name:    "a freeze that blocks prune holds only prune",
			gates:   []Gate{{Name: "f1", Kind: KindFreeze, Blocks: []string{BlockPrune}}},
			release: "web", now: "2026-07-01T14:00:00Z",
			want: Verdict{Prune: true, Reason: "frozen"},
		},
		{
			name:    "a freeze for other releases holds nothing",
			gates:   []Gate{{Name: "f1", Kind: KindFreeze, Releases: []string{"db"}, Reason: "x"}},
			release: "web", now: "2026-07-01T14:00:00Z", want: Verdict{},
		},
		{
			name:    "a cluster suspension",
			gates:   []Gate{{Name: "cluster", Kind: KindSuspend, Actor: "token:ops", Reason: "maintenance"}},
			release: "web", now: "2026-07-01T14:00:00Z",
			want: Verdict{Revisions: true, Reason: "cluster suspended by token:ops: maintenance"},
		},
		{
			name:    "a release suspension",
			gates:   []Gate{{Name: "web", Kind: KindSuspend, Releases: []string{"web"}}},
			release: "web", now: "2026-07-01T14:00:00Z",
			want: Verdict{Revisions: true, Reason: "release suspended"},
		},
		{
			name:    "a freeze and a closed allow window: both reasons, freeze first; next from the window",
			gates:   []Gate{business, {Name: "f1", Kind: KindFreeze, Reason: "incident"}},
			release: "web", now: "2026-07-01T12:00:00Z",
			want: Verdict{Revisions: true, Reason: `frozen: incident; window "business-hours" opens 22:00 Europe/Berlin`, Next: at("2026-07-01T20:00:00Z")},
		},
		{
			name:    "an invalid gate holds everything for what it covers",
			gates:   []Gate{deny("broken", "0 25 * * *", time.Hour, "")},
			release: "web", now: "2026-07-01T12:00:00Z",
			want: Verdict{Revisions: true, Prune: true, SelfHeal: true, Reason: `window "broken": schedule "0 25 * * *": end of range (25) above maximum (23): 25; it holds everything`},
		},
		{
			name:    "an invalid glob covers every release",
			gates:   []Gate{{Name: "f", Kind: KindFreeze, Releases: []string{"[web"}}},
			release: "db", now: "2026-07-01T12:00:00Z",
			want: Verdict{Revisions: true, Prune: true, SelfHeal: true, Reason: `freeze "f": releases entry "[web" is not a valid glob: syntax error in pattern; it holds everything`},
		},
		{
			name:  "a window more than a week away is dated",
			gates: []Gate{allow("yearly", "0 0 1 1 *", time.Hour, berlin)}, now: "2026-07-01T12:00:00Z",
			want: Verdict{Revisions: true, Reason: `window "yearly" opens 2027-01-01 00:00 Europe/Berlin`, Next: at("2026-12-31T23:00:00Z")},
		},
		{
			name:  "a long window that opened days ago is still open",
			gates: []Gate{deny("december", "0 0 1 12 *", 31*24*time.Hour, "")}, now: "2026-12-20T12:00:00Z",
			want: Verdict{Revisions: true, Reason: `window "december" closes 2027-01-01 00:00 UTC`, Next: at("2027-01-01T00:00:00Z")},
		},
		{
			name: "a dense schedule closes a duration after its last opening",
			// Opens every minute from 09:00 to 17:59, each time for 8 hours.
			gates: []Gate{deny("office", "* 9-17 * * *", 8*time.Hour, "")}, now: "2026-07-01T12:00:30Z",
			want: Verdict{Revisions: true, Reason: `window "office" closes 01:59 UTC`, Next: at("2026-07-02T01:59:00Z")},
		},
		{
			name:  "a dense schedule is closed a duration after its last opening",
			gates: []Gate{deny("office", "* 9-17 * * *", 8*time.Hour, "")}, now: "2026-07-02T01:59:00Z",
			want: Verdict{Next: at("2026-07-02T09:00:00Z")},
		},
		{
			name:  "a window every minute open for two never closes within the followed horizon",
			gates: []Gate{deny("always", "* * * * *", 2*time.Minute, "")}, now: "2026-07-01T12:00:30Z",
			want: Verdict{Revisions: true, Reason: `window "always" closes 13:06 UTC`, Next: at("2026-07-01T13:06:00Z")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			release := tt.release
			if release == "" {
				release = "web"
			}
			got := Evaluate(tt.gates, release, at(tt.now))
			if got.Revisions != tt.want.Revisions || got.Prune != tt.want.Prune || got.SelfHeal != tt.want.SelfHeal ||
				got.Reason != tt.want.Reason || !got.Next.Equal(tt.want.Next) {
				t.Errorf("Evaluate at %s:\n got %+v\nwant %+v", tt.now, got, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	valid := deny("w", "0 22 * * 1-5", time.Hour, "Europe/Berlin")
	tests := []struct {
		name string
		gate func(g *Gate)
		want string // "" for valid
	}{
		{name: "a valid window", gate: func(*Gate) {}},
		{name: "a valid freeze", gate: func(g *Gate) { *g = Gate{Name: "f", Kind: KindFreeze, Type: TypeDeny, Reason: "r"} }},
		{name: "empty name", gate: func(g *Gate) { g.Name = "" }, want: `gate: name is empty`},
		{name: "unknown kind", gate: func(g *Gate) { g.Kind = "pause" }, want: `gate "w": kind "pause" is not one of window, freeze, suspend`},
		{name: "unknown type", gate: func(g *Gate) { g.Type = "maybe" }, want: `window "w": type "maybe" is not "allow" or "deny"`},
		{name: "freeze of type allow", gate: func(g *Gate) { *g = Gate{Name: "f", Kind: KindFreeze, Type: TypeAllow} }, want: `freeze "f": type "allow" must be "deny" or empty for a freeze`},
		{name: "freeze with a schedule", gate: func(g *Gate) { *g = Gate{Name: "f", Kind: KindSuspend, Schedule: "* * * * *"} }, want: `suspend "f": schedule, duration and timeZone are for windows, not a suspend`},
		{name: "empty schedule", gate: func(g *Gate) { g.Schedule = "" }, want: `window "w": schedule "": is empty; want a five-field cron expression such as "0 22 * * *"`},
		{name: "six fields", gate: func(g *Gate) { g.Schedule = "0 0 22 * * *" }, want: `window "w": schedule "0 0 22 * * *": has 6 fields, want 5 (minute hour day-of-month month day-of-week)`},
		{name: "descriptor", gate: func(g *Gate) { g.Schedule = "@daily" }, want: `window "w": schedule "@daily": has 1 fields, want 5 (minute hour day-of-month month day-of-week)`},
		{name: "out of range minute", gate: func(g *Gate) { g.Schedule = "61 * * * *" }, want: `window "w": schedule "61 * * * *": end of range (61) above maximum (59): 61`},
		{name: "zero step", gate: func(g *Gate) { g.Schedule = "*/0 * * * *" }, want: `window "w": schedule "*/0 * * * *": step of range should be a positive number: */0`},
		{name: "time zone prefix", gate: func(g *Gate) { g.Schedule = "TZ=x" }, want: `window "w": schedule "TZ=x": must not carry a time zone; use timeZone`},
		{name: "never occurs", gate: func(g *Gate) { g.Schedule = "0 0 30 2 *" }, want: `window "w": schedule "0 0 30 2 *" never occurs`},
		{name: "unknown time zone", gate: func(g *Gate) { g.TimeZone = "Mars/Olympus" }, want: `window "w": timeZone "Mars/Olympus": is not an IANA time zone name (such as Europe/Berlin): unknown time zone Mars/Olympus`},
		{name: "Local time zone", gate: func(g *Gate) { g.TimeZone = "Local" }, want: `window "w": timeZone "Local": is not an IANA time zone name (such as Europe/Berlin)`},
		{name: "zero duration", gate: func(g *Gate) { g.Duration = 0 }, want: `window "w": duration 0s must be more than 0 and at most 8784h0m0s`},
		{name: "negative duration", gate: func(g *Gate) { g.Duration = -time.Hour }, want: `window "w": duration -1h0m0s must be more than 0 and at most 8784h0m0s`},
		{name: "too long", gate: func(g *Gate) { g.Duration = MaxDuration + time.Second }, want: `window "w": duration 8784h0m1s must be more than 0 and at most 8784h0m0s`},
		{name: "unknown block", gate: func(g *Gate) { g.Blocks = []string{"revisions", "deletes"} }, want: `window "w": blocks entry "deletes" is not one of revisions, prune, selfHeal`},
		{name: "bad glob", gate: func(g *Gate) { g.Releases = []string{"web", "a[b"} }, want: `window "w": releases entry "a[b" is not a valid glob: syntax error in pattern`},
		{name: "empty release", gate: func(g *Gate) { g.Releases = []string{""} }, want: `window "w": releases entry "" must be 1 to 253 bytes`},
		{name: "too many releases", gate: func(g *Gate) { g.Releases = make([]string, 257) }, want: `window "w": releases has 257 entries, more than 256`},
		{name: "long schedule", gate: func(g *Gate) { g.Schedule = strings.Repeat("1,", 200) + "1 * * * *" }, want: `window "w": schedule "` + strings.Repeat("1,", 32) + `...": is longer than 256 bytes`},
		{name: "long reason", gate: func(g *Gate) { *g = Gate{Name: "f", Kind: KindFreeze, Reason: strings.Repeat("x", 1025)} }, want: `freeze "f": reason or actor is longer than 1024 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := valid
			tt.gate(&g)
			err := Check(g)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("Check: %v\nwant %s", err, tt.want)
			}
		})
	}
}

// Hostile schedules never panic Check or Evaluate.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"0 22 * * *", "TZ=", "*/0 * * * *", "1-0 * * * *", "0 0 30 2 *", "? ? ? ? ?"} {
		f.Add(s, "Europe/Berlin", int64(time.Hour))
	}
	f.Fuzz(func(t *testing.T, schedule, tz string, d int64) {
		g := Gate{Name: "w", Kind: KindWindow, Type: TypeDeny, Schedule: schedule, TimeZone: tz, Duration: time.Duration(d)}
		_ = Check(g)
		Evaluate([]Gate{g}, "web", at("2026-03-29T01:10:00Z"))
	})
}

// TestStateAgainstAMinuteScan compares a window's state and next change with a scan of every
// minute, for random schedules, durations and instants in UTC (where wall-clock and instants
// agree, so the scan is plainly right).
func TestStateAgainstAMinuteScan(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 13))
	field := func(lo, hi int) string {
		switch rng.IntN(4) {
		case 0:
			return "*"
		case 1:
			return fmt.Sprint(lo + rng.IntN(hi-lo+1))
		case 2:
			a := lo + rng.IntN(hi-lo+1)
			return fmt.Sprintf("%d-%d", a, a+rng.IntN(hi-a+1))
		default:
			return fmt.Sprintf("*/%d", 1+rng.IntN(hi-lo))
		}
	}
	base := at("2026-07-01T00:00:00Z")
	for i := range 120 {
		schedule := strings.Join([]string{field(0, 59), field(0, 23), "*", "*", field(0, 6)}, " ")
		d := time.Duration(1+rng.IntN(6*60)) * time.Minute
		now := base.Add(time.Duration(rng.IntN(14*24*3600)) * time.Second)
		g := deny("w", schedule, d, "")
		o, err := compile(g)
		if err != nil {
			t.Fatalf("%q: %v", schedule, err)
		}
		// Openings minute by minute from a duration before now to four days after, and
		// prefix sums of them: open at x when an opening falls in (x-d, x].
		first := now.Add(-d).Truncate(time.Minute)
		n := int((4*24*time.Hour + d) / time.Minute)
		sum := make([]int, n+2)
		for k := 0; k <= n; k++ {
			m := first.Add(time.Duration(k) * time.Minute)
			sum[k+1] = sum[k]
			if o.sched.Next(m.Add(-time.Second)).Equal(m) {
				sum[k+1]++
			}
		}
		count := func(lo, hi time.Time) int { // openings in (lo, hi], both within the range
			idx := func(x time.Time) int { // openings at minutes <= x
				k := int(x.Sub(first)/time.Minute) + 1
				return sum[min(max(k, 0), n+1)]
			}
			return idx(hi) - idx(lo)
		}
		openAt := func(x time.Time) bool { return count(x.Add(-d), x) > 0 }
		wantOpen := openAt(now)
		var wantNext time.Time
		for m := now.Truncate(time.Minute).Add(time.Minute); m.Before(first.Add(time.Duration(n-1) * time.Minute)); m = m.Add(time.Minute) {
			if openAt(m) != wantOpen {
				wantNext = m
				break
			}
		}
		gotOpen, gotNext := o.state(d, now)
		switch {
		case gotOpen != wantOpen:
			t.Errorf("case %d %q for %s at %s: open %t; the scan says %t", i, schedule, d, now, gotOpen, wantOpen)
		case gotNext.Equal(wantNext):
		case wantOpen && (wantNext.IsZero() || gotNext.Before(wantNext)) && gotNext.Sub(now) >= time.Duration(maxExtensions)*time.Minute:
			// An open window whose openings keep overlapping reports where it stopped
			// following them (each one at least a minute later): the caller evaluates
			// again then.
		case wantNext.IsZero() && !wantOpen && gotNext.After(first.Add(time.Duration(n-1)*time.Minute)):
			// Opens beyond the scan (a weekly schedule).
		default:
			t.Errorf("case %d %q for %s at %s: open %t next %s; the scan says next %s", i, schedule, d, now, gotOpen, gotNext, wantNext)
		}
	}
}
