package schedule

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
)

// TestScheduleTombstones feeds each plan back as the next call's previous, as the hub does, and
// checks that a release leaves a cluster only with a tombstone that names why.
func TestScheduleTombstones(t *testing.T) {
	t.Parallel()
	baseline := release("baseline", target("env", "production"))
	apps := release("apps", target("env", "production"))
	stone := func(release, reason, rev string) desired.Tombstone {
		return desired.Tombstone{Release: release, Reason: reason, FleetRevision: rev, Revision: platformArtifact.Revision, Digest: platformArtifact.Digest}
	}
	steps := []struct {
		name      string
		fleet     *v1alpha1.Fleet
		rev       string
		labels    []string
		artifacts map[string]Artifact
		want      []string
		removed   []desired.Tombstone
	}{
		{name: "both assigned", fleet: fleet(baseline, apps), rev: "r1", labels: []string{"env", "production"}, want: []string{"apps", "baseline"}},
		{name: "relabelled: both leave, not selected", fleet: fleet(baseline, apps), rev: "r2", labels: []string{"env", "staging"},
			want: []string{}, removed: []desired.Tombstone{stone("apps", desired.ReasonNotSelected, "r2"), stone("baseline", desired.ReasonNotSelected, "r2")}},
		{name: "back: tombstones of assigned releases go", fleet: fleet(baseline, apps), rev: "r3", labels: []string{"env", "production"},
			want: []string{"apps", "baseline"}},
		{name: "release deleted", fleet: fleet(baseline), rev: "r4", labels: []string{"env", "production"},
			want: []string{"baseline"}, removed: []desired.Tombstone{stone("apps", desired.ReasonReleaseDeleted, "r4")}},
		{name: "an unrelated change keeps the tombstone", fleet: fleet(baseline), rev: "r5", labels: []string{"env", "production", "tier", "1"},
			want: []string{"baseline"}, removed: []desired.Tombstone{stone("apps", desired.ReasonReleaseDeleted, "r4")}},
		{name: "no artifact: kept, no tombstone", fleet: fleet(baseline), rev: "r6", labels: []string{"env", "production"}, artifacts: map[string]Artifact{},
			want: []string{"baseline"}, removed: []desired.Tombstone{stone("apps", desired.ReasonReleaseDeleted, "r4")}},
		{name: "no fleet configuration: nothing changes", fleet: nil, rev: "r7", labels: []string{"env", "staging"},
			want: []string{"baseline"}, removed: []desired.Tombstone{stone("apps", desired.ReasonReleaseDeleted, "r4")}},
	}
	var previous map[string]desired.Document
	for _, step := range steps {
		arts := artifacts
		if step.artifacts != nil {
			arts = step.artifacts
		}
		p := Schedule(step.fleet, []Cluster{cluster("c", step.labels...)}, arts, previous, step.rev)
		if diff := cmp.Diff(map[string][]string{"c": step.want}, assigned(p)); diff != "" {
			t.Errorf("%s: assignments mismatch (-want +got):\n%s", step.name, diff)
		}
		if diff := cmp.Diff(step.removed, p.Removed["c"]); diff != "" {
			t.Errorf("%s: tombstones mismatch (-want +got):\n%s", step.name, diff)
		}
		doc, err := desired.Encode(p.Document("c"))
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		back, err := desired.DecodeDocument(doc)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if diff := cmp.Diff(p.Document("c").Removed, back.Removed); diff != "" {
			t.Errorf("%s: tombstones after a round trip (-want +got):\n%s", step.name, diff)
		}
		previous = documents(p)
	}
}

func TestTombstonesAreBounded(t *testing.T) {
	t.Parallel()
	var prev desired.Document
	for i := range MaxTombstones + 10 {
		prev.Assignments = append(prev.Assignments, desired.Assignment{Release: fmt.Sprintf("r%03d", i)})
	}
	p := Schedule(fleet(), []Cluster{cluster("c")}, artifacts, map[string]desired.Document{"c": prev}, "rev")
	got := p.Removed["c"]
	if len(got) != MaxTombstones {
		t.Fatalf("%d tombstones, want %d", len(got), MaxTombstones)
	}
	if first, last := got[0].Release, got[len(got)-1].Release; first != "r010" || last != fmt.Sprintf("r%03d", MaxTombstones+9) {
		t.Errorf("kept tombstones %s..%s, want the newest: r010..r%03d", first, last, MaxTombstones+9)
	}
}
