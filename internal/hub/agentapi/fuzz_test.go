package agentapi

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/fuzzseed"
	"github.com/flotilla/flotilla/internal/hub/store"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// fuzzSeeds are the committed seed corpora, by fuzz target and file name.
func fuzzSeeds(t testing.TB) map[string]map[string][]byte {
	produced := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	req := &agentv1.ReportRequest{Reports: []*agentv1.Report{
		{
			Seq: 7, ProducedAt: timestamppb.New(produced), Compacted: 2,
			Statuses: []*agentv1.AssignmentStatus{{
				Release: "baseline", Generation: 3, Revision: "main@sha1:1111", Digest: "sha256:aaaa",
				Phase: "Ready", Health: "Current", Objects: 12, Created: 1, Configured: 2, Pruned: 1,
				Drifted: true, Drift: []*agentv1.DriftedObject{{Object: "deployment.apps/web", Namespace: "apps", Paths: []string{".spec.replicas"}, Healed: true}},
				DurationSeconds: 1.5,
			}},
		},
		{
			Seq: 8, ProducedAt: timestamppb.New(produced.Add(time.Minute)),
			Statuses: []*agentv1.AssignmentStatus{
				{Release: "apps", Generation: 3, Phase: "Failed", Conflicts: []string{"ConfigMap/apps/web: owned by kubectl"}, Error: "  apply failed\n"},
				{Release: "monitoring", Generation: 3, Phase: "Pending", DurationSeconds: math.NaN()},
			},
		},
	}}
	valid, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := desired.Encode(desired.Document{Assignments: []desired.Assignment{
		{
			Release: "baseline", Source: "platform", URL: "https://hub/artifacts/sha256/aaaa", Revision: "main@sha1:1111",
			Digest: "sha256:aaaa", Path: "clusters/eu", Namespace: "platform-system", CreateNamespace: true,
			Prune: true, SelfHeal: true, Timeout: 5 * time.Minute, Interval: 10 * time.Minute,
			Vars: map[string]string{"cluster_name": "c", "cluster_label_region": "eu"},
		},
		{Release: "apps", Source: "apps", Digest: "sha256:bbbb", Wait: true, Timeout: 90 * time.Second},
	}, Removed: []desired.Tombstone{{Release: "old", Reason: desired.ReasonReleaseDeleted, FleetRevision: "r1"}}})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]map[string][]byte{
		"FuzzReportMessage": {
			"two-reports": valid,
			"empty":       {},
			"truncated":   valid[:len(valid)/2],
		},
		"FuzzDesiredDocument": {
			"two-assignments": doc,
			"empty-list":      []byte("[]"),
			"unterminated":    []byte("{"),
			"garbage":         []byte("\x00\xffnull[{\"release\":1}]"),
		},
	}
}

// TestFuzzSeedCorpus checks that the committed seed corpora are what fuzzSeeds builds
// (-write-fuzz-seeds rewrites them).
func TestFuzzSeedCorpus(t *testing.T) {
	t.Parallel()
	for target, seeds := range fuzzSeeds(t) {
		fuzzseed.Check(t, target, seeds)
	}
}

// FuzzReportMessage decodes arbitrary bytes as a Report request, as the agent API does, and
// turns every status in it into what the hub stores. No input may panic. Every stored status
// belongs to the calling cluster, copies the fields the hub queries on, and keeps in Detail
// the whole status as the agent sent it (unknown fields aside).
func FuzzReportMessage(f *testing.F) {
	const cluster = "eu-1"
	f.Fuzz(func(t *testing.T, data []byte) {
		var req agentv1.ReportRequest
		if err := proto.Unmarshal(data, &req); err != nil {
			return
		}
		for _, r := range req.GetReports() {
			for _, st := range r.GetStatuses() {
				got := StatusFromProto(cluster, r, st)
				if got.Cluster != cluster {
					t.Fatalf("status of release %q has cluster %q, want %q", st.GetRelease(), got.Cluster, cluster)
				}
				if got.Release != st.GetRelease() || got.ObservedGeneration != st.GetGeneration() ||
					got.Phase != st.GetPhase() || got.Conflicts != len(st.GetConflicts()) ||
					got.Error != strings.TrimSpace(st.GetError()) {
					t.Fatalf("status %+v does not match the report entry %v", got, st)
				}
				var back agentv1.AssignmentStatus
				if err := protojson.Unmarshal(got.Detail, &back); err != nil {
					t.Fatalf("detail %q of release %q does not read back: %v", got.Detail, st.GetRelease(), err)
				}
				if diff := cmp.Diff(st, &back, protocmp.Transform(), protocmp.IgnoreUnknown(), cmpopts.EquateNaNs()); diff != "" {
					t.Fatalf("detail of release %q loses data (-sent +detail):\n%s", st.GetRelease(), diff)
				}
			}
		}
	})
}

// FuzzDesiredDocument turns arbitrary bytes, as a stored desired-state document, into the
// message Watch sends. No input may panic. It either fails, or gives a message for the stored
// cluster and generation, with every assignment of the document, that can be sent.
func FuzzDesiredDocument(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ds := store.DesiredState{Cluster: "c", Generation: 1, Document: data}
		msg, err := DesiredToProto(ds)
		if err != nil {
			if msg != nil {
				t.Fatalf("DesiredToProto returned a message and an error: %v", err)
			}
			return
		}
		if msg.GetCluster() != "c" || msg.GetGeneration() != 1 {
			t.Fatalf("desired state is for cluster %q generation %d, want c and 1", msg.GetCluster(), msg.GetGeneration())
		}
		assignments, err := desired.Decode(data)
		if err != nil {
			t.Fatalf("DesiredToProto accepted a document desired.Decode refuses: %v", err)
		}
		if len(msg.GetAssignments()) != len(assignments) {
			t.Fatalf("%d assignments in the message, %d in the document", len(msg.GetAssignments()), len(assignments))
		}
		seen := make(map[string]bool)
		for _, a := range msg.GetAssignments() {
			if a.GetRelease() == "" || seen[a.GetRelease()] {
				t.Fatalf("release %q is empty or assigned twice", a.GetRelease())
			}
			seen[a.GetRelease()] = true
		}
		if !msg.GetExplicitRemovals() {
			t.Fatal("a desired state from this hub does not say it carries tombstones")
		}
		for _, tb := range msg.GetRemoved() {
			if tb.GetRelease() == "" || seen[tb.GetRelease()] {
				t.Fatalf("tombstone of release %q: empty, or the release is also assigned", tb.GetRelease())
			}
			seen[tb.GetRelease()] = true
		}
		if _, err := proto.Marshal(&agentv1.WatchResponse{Desired: msg}); err != nil {
			t.Fatalf("desired state cannot be sent: %v", err)
		}
	})
}
