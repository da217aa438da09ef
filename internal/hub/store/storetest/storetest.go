// Package storetest is the contract test suite of store.Store: every implementation (SQLite
// now, PostgreSQL later) runs the same [Run] and so keeps the same behaviour.
//
// The suite checks behaviour through the interface only. Its times have microsecond
// precision, the finest every implementation keeps (PostgreSQL's timestamptz), and it
// compares nil and empty slices and maps as equal.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flotilla/flotilla/internal/hub/store"
)

// Run runs the contract suite. open must return a new, empty store each call; the suite closes
// every store it opens (open may register further cleanup with t.Cleanup, which runs after).
// Subtests that open a store of their own run in parallel (t.Parallel), so open is called
// from several goroutines at once; subtests sharing one store run one after another.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	o := opener(open)
	for _, g := range []struct {
		name string
		test func(t *testing.T)
	}{
		{"clusters", o.testClusters},
		{"remove cluster", o.testRemoveCluster},
		{"join tokens", o.testJoinTokens},
		{"certificates", o.testCertificates},
		{"revocation", o.testRevocation},
		{"desired state", o.testDesiredState},
		{"reports", o.testReports},
		{"report stats and compaction", o.testReportStats},
		{"sources and fleet", o.testSourcesAndFleet},
		{"times", o.testTimes},
		{"audit checkpoints", o.testAuditCheckpoints},
		{"records", o.testRecords},
	} {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.test(t)
		})
	}
}

type opener func(t *testing.T) store.Store

// new opens an empty store that is closed when t ends.
func (o opener) new(t *testing.T) store.Store {
	t.Helper()
	s := o(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// at is a fixed instant plus d, in a zone other than UTC so that the suite sees whether times
// come back in UTC, and with microsecond precision.
func at(d time.Duration) time.Time {
	return time.Date(2031, 3, 4, 5, 6, 7, 891011000, time.FixedZone("UTC+2", 2*3600)).Add(d)
}

// opts compares values as the contract defines them: instants, not zones (UTC is checked
// separately); nil and empty alike.
var opts = cmp.Options{cmpopts.EquateEmpty()}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// addCluster registers a cluster named name with labels app=name.
func addCluster(t *testing.T, ctx context.Context, s store.Store, name string) {
	t.Helper()
	must(t, s.AddCluster(ctx, store.Cluster{Name: name, Labels: map[string]string{"app": name}, CreatedAt: at(0)}))
}

// wantUTC fails t unless every non-zero time is in UTC.
func wantUTC(t *testing.T, what string, times ...time.Time) {
	t.Helper()
	for i, tm := range times {
		if !tm.IsZero() && tm.Location() != time.UTC {
			t.Errorf("%s: time %d is in %v, want UTC", what, i, tm.Location())
		}
	}
}

// wantRecent fails t unless tm, a time the store stamped itself, lies within a minute of now
// (allowing for a database server's clock).
func wantRecent(t *testing.T, what string, tm time.Time) {
	t.Helper()
	if d := time.Since(tm); tm.IsZero() || d < -time.Minute || d > time.Minute {
		t.Errorf("%s = %v, want about now", what, tm)
	}
	wantUTC(t, what, tm)
}
