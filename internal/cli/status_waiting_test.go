package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// TestStatusWaiting stores, as the hub ingests it, the report of an agent that a window holds
// back (phase Waiting, the revision still in force, the desired one pending) and reads
// `flotilla status` as a user would: the phase, the applied revision, and the line saying what
// it waits for; -o json carries it in "waiting".
func TestStatusWaiting(t *testing.T) {
	t.Parallel()
	f := hubtest.Start(t, hubtest.Options{Clusters: 2, Releases: 1})
	const window = `window "business-hours" opens 22:00 Europe/Berlin`
	desired := f.Seeded[0] // cluster-0000, Ready on the desired revision
	report := &agentv1.AssignmentStatus{
		Release: desired.Release, Generation: 1, Revision: hubtest.OldRevision, Digest: hubtest.OldDigest,
		Phase: string(hubclient.PhaseWaiting), Health: "Current", Objects: 2,
		Waiting: window, PendingRevision: desired.Revision, PendingDigest: desired.Digest,
	}
	detail, err := protojson.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	st := store.AssignmentStatus{
		Cluster: desired.Cluster, Release: desired.Release, ObservedGeneration: 1, Revision: report.Revision, Digest: report.Digest,
		Phase: report.Phase, Health: report.Health, Objects: 2, Detail: detail, ReportedAt: now, UpdatedAt: now,
	}
	if _, err := f.Store.IngestReport(t.Context(), desired.Cluster, 2, []store.AssignmentStatus{st}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--hub", f.APIURL, "--token", f.AdminToken, "--ca", f.CAPath)
		if code := Run(t.Context(), args, &out, &errOut); code != 0 {
			t.Fatalf("flotilla %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		return out.String()
	}

	out := squeeze(run("status", desired.Release))
	for _, want := range []string{
		"\n" + desired.Cluster + " " + short(desired.Revision) + " " + short(hubtest.OldRevision) + " Waiting Current - 0 ",
		"\n\n" + desired.Cluster + ": Waiting: " + window + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("flotilla status %s lacks %q:\n%s", desired.Release, want, out)
		}
	}
	if strings.Contains(out, f.Clusters[1]+": Waiting") {
		t.Errorf("a cluster that does not wait has a Waiting line:\n%s", out)
	}
	if out := run("status", "--cluster", desired.Cluster); !strings.Contains(out, desired.Release+" on "+desired.Cluster+": Waiting: "+window) {
		t.Errorf("flotilla status --cluster names the release:\n%s", out)
	}
	if out := run("cluster", "show", desired.Cluster); !strings.Contains(out, desired.Release+" on "+desired.Cluster+": Waiting: "+window) {
		t.Errorf("flotilla cluster show says what holds the release back:\n%s", out)
	}

	var v hubclient.StatusView
	if err := json.Unmarshal([]byte(run("status", desired.Release, "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	for _, a := range v.Assignments {
		if a.Cluster == desired.Cluster && (a.Phase != hubclient.PhaseWaiting || a.Waiting != window || a.AppliedRevision != hubtest.OldRevision) {
			t.Errorf("status -o json: %+v, want phase Waiting, waiting %q, applied %s", a, window, hubtest.OldRevision)
		}
	}
	// The counts table counts Waiting among PROGRESSING.
	if out := squeeze(run("status")); !strings.Contains(out, desired.Release+" "+short(desired.Revision)+" 2 1 1 0 0 0 ") {
		t.Errorf("flotilla status counts:\n%s", out)
	}
}
