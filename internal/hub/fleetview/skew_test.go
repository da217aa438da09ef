package fleetview

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func av(release, cluster, desired, applied string) hubclient.AssignmentView {
	return hubclient.AssignmentView{Release: release, Cluster: cluster, DesiredRevision: desired, DesiredDigest: "d-" + desired, AppliedRevision: applied, AppliedDigest: digestOf(applied)}
}

func digestOf(rev string) string {
	if rev == "" {
		return ""
	}
	return "d-" + rev
}

func TestSkew(t *testing.T) {
	t.Parallel()
	// 100 clusters should run baseline at abc; 88 do, 9 still run 9f8, 3 have not reported.
	var fleet []hubclient.AssignmentView
	var old, none []string
	for i := range 100 {
		name := fmt.Sprintf("c%03d", i)
		applied := "abc"
		switch {
		case i%11 == 3:
			applied = "9f8"
			old = append(old, name)
		case i >= 97:
			applied = ""
			none = append(none, name)
		}
		fleet = append(fleet, av("baseline", name, "abc", applied))
	}
	var onDesired []string
	for _, a := range fleet {
		if a.AppliedRevision == "abc" {
			onDesired = append(onDesired, a.Cluster)
		}
	}

	tests := []struct {
		name string
		in   []hubclient.AssignmentView
		want []hubclient.ReleaseSkew
	}{
		{name: "nothing assigned", in: nil, want: []hubclient.ReleaseSkew{}},
		{
			// A path per cluster: each cluster's own artifact, compared with its own desired one.
			name: "an artifact per cluster",
			in: func() []hubclient.AssignmentView {
				a, b, c := av("web", "a", "r2", "r2"), av("web", "b", "r2", "r2"), av("web", "c", "r2", "r2")
				a.DesiredDigest, a.AppliedDigest = "d-r2-a", "d-r2-a"
				b.DesiredDigest, b.AppliedDigest = "d-r2-b", "d-r2-b"
				c.DesiredDigest, c.AppliedDigest = "d-r2-c", "d-r2-other" // the revision, not its own artifact
				return []hubclient.AssignmentView{a, b, c}
			}(),
			want: []hubclient.ReleaseSkew{{Release: "web", DesiredRevision: "r2", DesiredDigest: "", Clusters: 3, Skewed: 1, Groups: []hubclient.RevisionGroup{
				{Revision: "r2", Digest: "", Desired: true, Count: 2, Clusters: []string{"a", "b"}},
				{Revision: "r2", Digest: "d-r2-other", Count: 1, Clusters: []string{"c"}},
			}}},
		},
		{
			name: "all on the desired revision",
			in:   []hubclient.AssignmentView{av("web", "b", "r1", "r1"), av("web", "a", "r1", "r1")},
			want: []hubclient.ReleaseSkew{{Release: "web", DesiredRevision: "r1", DesiredDigest: "d-r1", Clusters: 2, Groups: []hubclient.RevisionGroup{
				{Revision: "r1", Digest: "d-r1", Desired: true, Count: 2, Clusters: []string{"a", "b"}},
			}}},
		},
		{
			name: "old revision and not reported are skewed, desired group first",
			in:   fleet,
			want: []hubclient.ReleaseSkew{{Release: "baseline", DesiredRevision: "abc", DesiredDigest: "d-abc", Clusters: 100, Skewed: len(old) + len(none), Groups: []hubclient.RevisionGroup{
				{Revision: "abc", Digest: "d-abc", Desired: true, Count: len(onDesired), Clusters: onDesired},
				{Revision: "9f8", Digest: "d-9f8", Count: len(old), Clusters: old},
				{Revision: "", Digest: "", Count: len(none), Clusters: none},
			}}},
		},
		{
			name: "failed on the desired revision is skew",
			in: []hubclient.AssignmentView{av("web", "a", "r2", "r2"), func() hubclient.AssignmentView {
				v := av("web", "b", "r2", "r2")
				v.Phase, v.ReportedPhase = "Failed", "Failed"
				return v
			}(), func() hubclient.AssignmentView {
				v := av("web", "c", "r2", "r2")
				v.Phase, v.ReportedPhase = "Unreachable", "Failed"
				return v
			}()},
			want: []hubclient.ReleaseSkew{{Release: "web", DesiredRevision: "r2", DesiredDigest: "d-r2", Clusters: 3, Skewed: 2, Groups: []hubclient.RevisionGroup{
				{Revision: "r2", Digest: "d-r2", Desired: true, Count: 1, Clusters: []string{"a"}},
				{Revision: "r2", Digest: "d-r2", Failed: true, Count: 2, Clusters: []string{"b", "c"}},
			}}},
		},
		{
			name: "same revision, another artifact is skew",
			in: []hubclient.AssignmentView{av("web", "a", "r1", "r1"), {
				Release: "web", Cluster: "b", DesiredRevision: "r1", DesiredDigest: "d-r1", AppliedRevision: "r1", AppliedDigest: "other",
			}},
			want: []hubclient.ReleaseSkew{{Release: "web", DesiredRevision: "r1", DesiredDigest: "d-r1", Clusters: 2, Skewed: 1, Groups: []hubclient.RevisionGroup{
				{Revision: "r1", Digest: "d-r1", Desired: true, Count: 1, Clusters: []string{"a"}},
				{Revision: "r1", Digest: "other", Count: 1, Clusters: []string{"b"}},
			}}},
		},
		{
			name: "clusters desiring different revisions are compared only with their peers",
			in:   []hubclient.AssignmentView{av("web", "a", "r2", "r1"), av("web", "b", "r1", "r1"), av("api", "a", "r1", "r1")},
			want: []hubclient.ReleaseSkew{
				{Release: "api", DesiredRevision: "r1", DesiredDigest: "d-r1", Clusters: 1, Groups: []hubclient.RevisionGroup{{Revision: "r1", Digest: "d-r1", Desired: true, Count: 1, Clusters: []string{"a"}}}},
				{Release: "web", DesiredRevision: "r1", DesiredDigest: "d-r1", Clusters: 1, Groups: []hubclient.RevisionGroup{{Revision: "r1", Digest: "d-r1", Desired: true, Count: 1, Clusters: []string{"b"}}}},
				{Release: "web", DesiredRevision: "r2", DesiredDigest: "d-r2", Clusters: 1, Skewed: 1, Groups: []hubclient.RevisionGroup{{Revision: "r1", Digest: "d-r1", Count: 1, Clusters: []string{"a"}}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, Skew(tt.in)); diff != "" {
				t.Errorf("Skew (-want +got):\n%s", diff)
			}
		})
	}
}
