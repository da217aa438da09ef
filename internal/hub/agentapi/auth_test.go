package agentapi

import (
	"testing"
	"time"
)

func TestAgentAuth(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entry := authEntry{cluster: "edge-1", serial: "01", notBefore: t0.Add(-time.Hour), notAfter: t0.Add(time.Hour), checked: t0}
	key := chainKey([][]byte{[]byte("leaf of edge-1")})
	for _, tc := range []struct {
		name                string
		then                func(a *Auth, epoch uint64)
		at                  time.Time
		wantVerified, fresh bool
	}{
		{"a checked certificate is reused", func(*Auth, uint64) {}, t0.Add(time.Minute), true, true},
		{"the store is asked again after the TTL", func(*Auth, uint64) {}, t0.Add(2 * time.Minute), true, false},
		{"an expired certificate is verified again", func(*Auth, uint64) {}, t0.Add(time.Hour + time.Second), false, false},
		{"a clock set back asks the store again", func(*Auth, uint64) {}, t0.Add(-time.Second), true, false},
		{"removing the cluster forgets it", func(a *Auth, _ uint64) { a.ForgetCluster("edge-1") }, t0, false, false},
		{"removing another cluster does not", func(a *Auth, _ uint64) { a.ForgetCluster("edge-2") }, t0, true, true},
		{"a missed notification forgets everything", func(a *Auth, _ uint64) { a.ForgetAll() }, t0, false, false},
		{"a store answer read before a removal is not kept after it", func(a *Auth, epoch uint64) {
			a.ForgetCluster("edge-1")
			a.put(key, entry, epoch)
		}, t0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAuth(2 * time.Minute)
			_, _, _, epoch := a.lookup(key, t0)
			a.put(key, entry, epoch)
			tc.then(a, epoch)
			got, verified, fresh, _ := a.lookup(key, tc.at)
			if verified != tc.wantVerified || fresh != tc.fresh {
				t.Errorf("lookup at %v: verified %v, fresh %v; want %v, %v", tc.at.Sub(t0), verified, fresh, tc.wantVerified, tc.fresh)
			}
			if verified && got.cluster != "edge-1" {
				t.Errorf("lookup: cluster %q, want edge-1", got.cluster)
			}
		})
	}
}

func TestAgentAuthSweepsExpiredChecks(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAuth(time.Minute)
	for i := range 1024 {
		a.put(chainKey([][]byte{{byte(i), byte(i >> 8)}}), authEntry{cluster: "old", notAfter: t0.Add(time.Hour), checked: t0}, 0)
	}
	a.put(chainKey([][]byte{[]byte("new")}), authEntry{cluster: "new", notAfter: t0.Add(time.Hour), checked: t0.Add(time.Minute)}, 0)
	if n := len(a.entries); n != 1 {
		t.Errorf("%d entries after a put past the sweep size, want 1: the 1,024 checked a TTL ago go", n)
	}
}
