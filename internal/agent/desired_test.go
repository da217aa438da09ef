package agent

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/desired"
)

func TestCheckRemovals(t *testing.T) {
	t.Parallel()
	ds := func(gen int64, explicit bool, releases []string, tombstones ...string) *desired.State {
		d := &desired.State{Generation: gen, ExplicitRemovals: explicit}
		for _, r := range releases {
			d.Assignments = append(d.Assignments, desired.Assignment{Release: r})
		}
		for _, r := range tombstones {
			d.Removed = append(d.Removed, desired.Tombstone{Release: r, Reason: "release-deleted"})
		}
		return d
	}
	for _, tc := range []struct {
		name     string
		accepted *desired.State
		next     *desired.State
		want     *RefusedError
		reason   string
	}{
		{name: "first document", accepted: nil, next: ds(1, true, []string{"a"})},
		{name: "same releases", accepted: ds(1, true, []string{"a", "b"}), next: ds(2, true, []string{"b", "a"})},
		{name: "a release added", accepted: ds(1, true, []string{"a"}), next: ds(2, true, []string{"a", "b"})},
		{name: "a release dropped with its tombstone", accepted: ds(1, true, []string{"a", "b"}), next: ds(2, true, []string{"a"}, "b")},
		{name: "everything dropped with tombstones", accepted: ds(1, true, []string{"a", "b"}), next: ds(2, true, nil, "a", "b")},
		{
			name: "a release dropped without a tombstone", accepted: ds(6, true, []string{"baseline", "web"}), next: ds(7, true, []string{"web"}),
			want:   &RefusedError{Generation: 7, Dropped: []string{"baseline"}},
			reason: `desired state generation 7 drops release "baseline" without a tombstone; refused, nothing pruned`,
		},
		{
			name: "an empty document", accepted: ds(3, true, []string{"a", "b"}), next: ds(4, true, nil, "c"),
			want:   &RefusedError{Generation: 4, Dropped: []string{"a", "b"}},
			reason: `desired state generation 4 drops releases "a", "b" without a tombstone; refused, nothing pruned`,
		},
		{name: "an old hub that drops nothing", accepted: ds(1, false, []string{"a"}), next: ds(2, false, []string{"a", "b"})},
		{
			name: "an old hub that drops a release", accepted: ds(1, false, []string{"a", "b"}), next: ds(2, false, []string{"a"}),
			want:   &RefusedError{Generation: 2, Dropped: []string{"b"}, OldHub: true},
			reason: `desired state generation 2 drops release "b" from a hub that sends no tombstones; upgrade the hub to remove releases; refused, nothing pruned`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkRemovals(tc.accepted, *tc.next)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("checkRemovals (-want +got):\n%s", diff)
			}
			if got == nil {
				return
			}
			if got.Error() != tc.reason {
				t.Errorf("reason = %q\nwant %q", got.Error(), tc.reason)
			}
			var refused *RefusedError
			if err := error(got); !errors.As(err, &refused) {
				t.Error("not a *RefusedError")
			}
		})
	}
}
