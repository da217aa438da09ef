package hubtest_test

import (
	"testing"

	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestStart checks that the seeded fleet is what the API shows: every assignment listed, at
// the source's revision, with the seeded phases.
func TestStart(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 60, Releases: 3})
	c, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(st.Assignments), 60*3; got != want {
		t.Fatalf("status lists %d assignments, want %d", got, want)
	}
	phases := map[hubclient.Phase]int{}
	for _, a := range st.Assignments {
		if a.DesiredRevision != f.Revision {
			t.Errorf("%s on %s desires %q, want %q", a.Release, a.Cluster, a.DesiredRevision, f.Revision)
		}
		phases[a.Phase]++
	}
	// Of 60 clusters: 6 run the old revision (i%10==3), 3 failed (i%20==7), and on the first
	// release 2 failed with a conflict (i%25==11); cluster-0049 is unreachable.
	if phases["Progressing"] != 6*3 || phases["Failed"] != 3*3+2 || phases["Unreachable"] != 3 {
		t.Errorf("phases = %v, want 18 Progressing, 11 Failed and 3 Unreachable", phases)
	}
	if len(f.Unreachable) != 1 || f.Unreachable[0] != "cluster-0049" {
		t.Errorf("unreachable = %v, want [cluster-0049]", f.Unreachable)
	}
}
