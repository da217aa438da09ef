package audit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStep(t *testing.T) {
	t.Parallel()
	const every = time.Hour
	at := t0.Add
	ready := func(d time.Duration) Check {
		return Check{Time: at(d), Revision: "main@sha1:aaa", Digest: "sha256:111", Phase: "Ready", Health: "Current"}
	}
	// base is the checkpoint a full record of ready(0) leaves.
	base := Checkpoint{Revision: "main@sha1:aaa", Digest: "sha256:111", Phase: "Ready", Health: "Current", Since: at(0), ChainedAt: at(0)}
	// open is base after two unchanged checks, at 10 and 20 minutes.
	open := base
	open.FirstVerified, open.LastVerified, open.Count = at(10*time.Minute), at(20*time.Minute), 2
	with := func(c Check, f func(*Check)) Check { f(&c); return c }

	tests := []struct {
		name     string
		cp       Checkpoint
		ok       bool
		check    Check
		wantNext Checkpoint
		wantV    Verdict
		wantW    Window
	}{{
		name: "the first check of an assignment is a full record", ok: false, check: ready(0),
		wantNext: base, wantV: RecordFull,
	}, {
		name: "an unchanged check within the interval records nothing and opens the window", cp: base, ok: true, check: ready(10 * time.Minute),
		wantNext: func() Checkpoint {
			c := base
			c.FirstVerified, c.LastVerified, c.Count = at(10*time.Minute), at(10*time.Minute), 1
			return c
		}(),
		wantV: RecordNone,
	}, {
		name: "an unchanged check joins the open window", cp: open, ok: true, check: ready(30 * time.Minute),
		wantNext: func() Checkpoint {
			c := open
			c.LastVerified, c.Count = at(30*time.Minute), 3
			return c
		}(),
		wantV: RecordNone,
	}, {
		name: "an unchanged check just before the interval records nothing", cp: open, ok: true, check: ready(every - time.Nanosecond),
		wantNext: func() Checkpoint {
			c := open
			c.LastVerified, c.Count = at(every-time.Nanosecond), 3
			return c
		}(),
		wantV: RecordNone,
	}, {
		name: "an unchanged check once the interval has passed is a verified record of the window", cp: open, ok: true, check: ready(every),
		wantNext: func() Checkpoint {
			c := base
			c.ChainedAt = at(every)
			return c
		}(),
		wantV: RecordVerified, wantW: Window{From: at(10 * time.Minute), To: at(every), Count: 3},
	}, {
		name: "a lone unchanged check after the interval is a window of one", cp: base, ok: true, check: ready(2 * every),
		wantNext: func() Checkpoint {
			c := base
			c.ChainedAt = at(2 * every)
			return c
		}(),
		wantV: RecordVerified, wantW: Window{From: at(2 * every), To: at(2 * every), Count: 1},
	}, {
		name: "objects changed is a full record closing the open window", cp: open, ok: true,
		check:    with(ready(25*time.Minute), func(c *Check) { c.Changed = true }),
		wantNext: Checkpoint{Revision: "main@sha1:aaa", Digest: "sha256:111", Phase: "Ready", Health: "Current", Since: at(25 * time.Minute), ChainedAt: at(25 * time.Minute)},
		wantV:    RecordFull, wantW: Window{From: at(10 * time.Minute), To: at(20 * time.Minute), Count: 2},
	}, {
		name: "a new revision is a full record", cp: base, ok: true,
		check:    with(ready(5*time.Minute), func(c *Check) { c.Revision, c.Digest = "main@sha1:bbb", "sha256:222" }),
		wantNext: Checkpoint{Revision: "main@sha1:bbb", Digest: "sha256:222", Phase: "Ready", Health: "Current", Since: at(5 * time.Minute), ChainedAt: at(5 * time.Minute)},
		wantV:    RecordFull,
	}, {
		name: "a new digest alone is a full record", cp: base, ok: true,
		check:    with(ready(5*time.Minute), func(c *Check) { c.Digest = "sha256:222" }),
		wantNext: Checkpoint{Revision: "main@sha1:aaa", Digest: "sha256:222", Phase: "Ready", Health: "Current", Since: at(5 * time.Minute), ChainedAt: at(5 * time.Minute)},
		wantV:    RecordFull,
	}, {
		name: "a new phase is a full record", cp: base, ok: true,
		check:    with(ready(5*time.Minute), func(c *Check) { c.Phase = "Progressing" }),
		wantNext: Checkpoint{Revision: "main@sha1:aaa", Digest: "sha256:111", Phase: "Progressing", Health: "Current", Since: at(5 * time.Minute), ChainedAt: at(5 * time.Minute)},
		wantV:    RecordFull,
	}, {
		name: "a new health is a full record", cp: base, ok: true,
		check:    with(ready(5*time.Minute), func(c *Check) { c.Health = "InProgress" }),
		wantNext: Checkpoint{Revision: "main@sha1:aaa", Digest: "sha256:111", Phase: "Ready", Health: "InProgress", Since: at(5 * time.Minute), ChainedAt: at(5 * time.Minute)},
		wantV:    RecordFull,
	}, {
		name: "a change after a checkpoint is a full record with no window", cp: func() Checkpoint { c := base; c.ChainedAt = at(every); return c }(), ok: true,
		check:    with(ready(every+time.Minute), func(c *Check) { c.Changed = true }),
		wantNext: Checkpoint{Revision: "main@sha1:aaa", Digest: "sha256:111", Phase: "Ready", Health: "Current", Since: at(every + time.Minute), ChainedAt: at(every + time.Minute)},
		wantV:    RecordFull,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, v, w := Step(tt.cp, tt.ok, tt.check, every)
			if v != tt.wantV {
				t.Errorf("verdict = %v, want %v", v, tt.wantV)
			}
			if diff := cmp.Diff(tt.wantNext, next); diff != "" {
				t.Errorf("next checkpoint (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantW, w); diff != "" {
				t.Errorf("window (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerifiedEvent(t *testing.T) {
	t.Parallel()
	cp := Checkpoint{Revision: "main@sha1:aaa", Digest: "sha256:111", Phase: "Ready", Since: t0}
	w := Window{From: t0.Add(10 * time.Minute), To: t0.Add(time.Hour), Count: 6}
	got := VerifiedEvent("agent:c1", "c1", "web", cp, w)
	want := Event{Time: w.To, Actor: "agent:c1", Action: ActionVerified, Cluster: "c1", Release: "web", Detail: map[string]any{
		"revision": "main@sha1:aaa", "digest": "sha256:111", "phase": "Ready", "since": t0,
		"from": w.From, "to": w.To, "count": int64(6),
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("VerifiedEvent (-want +got):\n%s", diff)
	}
}
