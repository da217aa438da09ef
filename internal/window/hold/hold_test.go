package hold

import (
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/window"
)

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// A record the hub cannot read holds back everything it could cover, as the controller and
// the operator API both read it.
func TestDecodeHoldsWhatItCannotRead(t *testing.T) {
	t.Parallel()
	f, err := DecodeFreeze("frz-bad", []byte(`{"reason": 7}`), now)
	if err == nil || !strings.Contains(err.Error(), `freeze record "frz-bad"`) {
		t.Fatalf("DecodeFreeze error %v, want one naming the record", err)
	}
	if f.ID != "frz-bad" || f.Release != "" || len(f.Selector) != 0 || !f.Created.Equal(now) {
		t.Fatalf("undecodable freeze read as %+v, want a freeze of everything named by its key", f)
	}
	if !f.Covers(map[string]string{"env": "prod"}) {
		t.Error("an undecodable freeze does not cover every cluster")
	}
	if v := window.Evaluate([]window.Gate{f.Gate()}, "any-release", now); !v.Revisions || !strings.Contains(v.Reason, "does not decode") {
		t.Errorf("verdict of an undecodable freeze %+v, want revisions held with the decode error as reason", v)
	}

	s, err := DecodeSuspension("edge-1", []byte(`[`), now)
	if err == nil || !strings.Contains(err.Error(), `cluster "edge-1"`) {
		t.Fatalf("DecodeSuspension error %v, want one naming the cluster", err)
	}
	if s.Cluster != "edge-1" || !s.Since.Equal(now) || !IsClusterSuspension(s.Gate()) {
		t.Fatalf("undecodable suspension read as %+v (gate %+v), want the cluster's suspension", s, s.Gate())
	}
}

func TestFreezeGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		f                Freeze
		labels           map[string]string
		covers           bool
		holdsWeb, holdsA bool
	}{
		{"every release everywhere", Freeze{ID: "f1", Reason: "incident"}, map[string]string{"env": "prod"}, true, true, true},
		{"one release", Freeze{ID: "f2", Release: "web", Reason: "pause"}, nil, true, true, false},
		{"selector matches", Freeze{ID: "f3", Selector: map[string]string{"env": "prod"}, Reason: "x"}, map[string]string{"env": "prod", "region": "eu"}, true, true, true},
		{"selector does not match", Freeze{ID: "f4", Selector: map[string]string{"env": "prod"}, Reason: "x"}, map[string]string{"env": "staging"}, false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.f.Covers(tt.labels); got != tt.covers {
				t.Errorf("Covers(%v) = %v, want %v", tt.labels, got, tt.covers)
			}
			g := tt.f.Gate()
			if !IsFreeze(g) || IsClusterSuspension(g) || g.Name != tt.f.ID {
				t.Errorf("gate %+v is not freeze %s", g, tt.f.ID)
			}
			gates := []window.Gate{g}
			if got := window.Evaluate(gates, "web", now).Revisions; got != tt.holdsWeb {
				t.Errorf("holds web: %v, want %v", got, tt.holdsWeb)
			}
			if got := window.Evaluate(gates, "api", now).Revisions; got != tt.holdsA {
				t.Errorf("holds api: %v, want %v", got, tt.holdsA)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	if r, err := CheckReason("  incident 4711 \n", true); err != nil || r != "incident 4711" {
		t.Errorf("CheckReason trims to %q, %v; want %q", r, err, "incident 4711")
	}
	for _, tt := range []struct {
		name, reason string
		required     bool
	}{
		{"missing", " ", true},
		{"too long", strings.Repeat("x", MaxReason+1), false},
		{"two lines", "a\nb", false},
		{"control character", "a\x7fb", false},
	} {
		if _, err := CheckReason(tt.reason, tt.required); err == nil {
			t.Errorf("CheckReason accepts a reason %s", tt.name)
		}
	}
	if _, err := CheckReason("", false); err != nil {
		t.Errorf("CheckReason refuses an empty optional reason: %v", err)
	}
	if err := CheckSelector(map[string]string{"env": "prod", "flotilla.dev/region": "eu-1"}); err != nil {
		t.Errorf("CheckSelector refuses a valid selector: %v", err)
	}
	many := map[string]string{}
	for i := range MaxSelectorKeys + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	for name, sel := range map[string]map[string]string{
		"a bad key":     {"not a key!": "v"},
		"a bad value":   {"env": "has space"},
		"too many keys": many,
	} {
		if err := CheckSelector(sel); err == nil {
			t.Errorf("CheckSelector accepts %s", name)
		}
	}
}
