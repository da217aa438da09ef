package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/phase"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

func cm(name string) reconcile.ObjectRef {
	return reconcile.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: name}
}

func TestFillStatusDetailsOnlyObjectsThatNeedALook(t *testing.T) {
	t.Parallel()
	ready := true
	notReady := false
	current := &reconcile.Health{Status: "Current"}
	for _, tc := range []struct {
		name      string
		res       *reconcile.Result
		want      []*agentv1.ObjectDetail
		wantPhase phase.Phase
		wantError string
	}{
		{
			name: "a healthy, unchanged assignment details nothing",
			res: &reconcile.Result{Ready: &ready, Objects: []reconcile.ObjectResult{
				{ObjectRef: cm("a"), Action: reconcile.Unchanged, Health: current},
				{ObjectRef: cm("b"), Action: reconcile.Configured, Health: current},
				{ObjectRef: cm("gone"), Action: reconcile.Pruned},
			}},
			wantPhase: phase.Ready,
		},
		{
			name: "drift, healed or not, with desired and live values",
			res: &reconcile.Result{Objects: []reconcile.ObjectResult{
				{ObjectRef: cm("fine"), Action: reconcile.Unchanged},
				{ObjectRef: cm("healed"), Action: reconcile.Healed, DriftPaths: []string{".data.level"},
					Drift: []reconcile.FieldDrift{{Path: ".data.level", Desired: `"info"`, Live: `"debug"`, Manager: "kubectl-edit"}}},
				{ObjectRef: cm("deleted"), Action: reconcile.Drifted, DriftPaths: []string{reconcile.DeletedPath},
					Drift: []reconcile.FieldDrift{{Path: reconcile.DeletedPath}}},
			}},
			want: []*agentv1.ObjectDetail{
				{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "deleted", Action: "drifted", Drift: []*agentv1.FieldDrift{{Path: "(deleted)"}}},
				{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "healed", Action: "healed", Drift: []*agentv1.FieldDrift{{Path: ".data.level", Desired: `"info"`, Live: `"debug"`, Manager: "kubectl-edit"}}},
			},
			wantPhase: phase.Ready,
		},
		{
			name: "a conflict names the owner and the field, and fails the assignment",
			res: &reconcile.Result{Objects: []reconcile.ObjectResult{
				{ObjectRef: cm("settings"), Action: reconcile.Conflict, ConflictWith: []string{"team-x"}, ConflictPaths: []string{".data.logEndpoint"},
					Conflicts: []reconcile.FieldConflict{{Field: ".data.logEndpoint", Owner: `field manager "team-x"`}}},
			}},
			want: []*agentv1.ObjectDetail{
				{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "settings", Action: "conflict", Conflicts: []*agentv1.FieldConflict{{Field: ".data.logEndpoint", Owner: `field manager "team-x"`}}},
			},
			wantPhase: phase.Failed,
			wantError: `conflict: configmap/settings in namespace "apps": .data.logEndpoint owned by field manager "team-x"`,
		},
		{
			name: "objects not Current after the wait, and a failed apply first",
			res: &reconcile.Result{Ready: &notReady, Objects: []reconcile.ObjectResult{
				{ObjectRef: cm("fine"), Action: reconcile.Unchanged, Health: current},
				{ObjectRef: cm("slow"), Action: reconcile.Configured, Health: &reconcile.Health{Status: "InProgress", Message: "Replicas: 1/3"}},
				{ObjectRef: cm("broken"), Action: reconcile.Created, Error: "admission webhook denied the request"},
			}},
			want: []*agentv1.ObjectDetail{
				{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "broken", Action: "created", Error: "admission webhook denied the request"},
				{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "slow", Action: "configured", Health: "InProgress", HealthMessage: "Replicas: 1/3"},
			},
			wantPhase: phase.Ready, // the health, not the phase, says InProgress
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &agentv1.AssignmentStatus{}
			fillStatus(st, tc.res, nil)
			if diff := cmp.Diff(tc.want, st.ObjectDetails, protocmp.Transform()); diff != "" {
				t.Errorf("object details (-want +got):\n%s", diff)
			}
			if st.ObjectDetailsOmitted != 0 {
				t.Errorf("%d objects omitted; want none", st.ObjectDetailsOmitted)
			}
			if phase.Phase(st.Phase) != tc.wantPhase || st.Error != tc.wantError {
				t.Errorf("phase, error = %s, %q; want %s, %q", st.Phase, st.Error, tc.wantPhase, tc.wantError)
			}
		})
	}
}

func TestConflictErrorNamesTheFirstFew(t *testing.T) {
	t.Parallel()
	var conflicts []string
	for i := range 5 {
		conflicts = append(conflicts, fmt.Sprintf(`configmap/c%d in namespace "apps": .data.k owned by field manager "team-x"`, i))
	}
	got := conflictError(conflicts)
	want := `5 conflicts: configmap/c0 in namespace "apps": .data.k owned by field manager "team-x"; ` +
		`configmap/c1 in namespace "apps": .data.k owned by field manager "team-x"; ` +
		`configmap/c2 in namespace "apps": .data.k owned by field manager "team-x"; and 2 more`
	if got != want {
		t.Errorf("conflictError =\n%s\nwant\n%s", got, want)
	}
}

func TestObjectDetailsAreBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", 2000) // 4,000 bytes: cut on a rune boundary
	var objects []reconcile.ObjectResult
	for i := range 3000 {
		o := reconcile.ObjectResult{ObjectRef: cm(fmt.Sprintf("cm-%04d", i)), Action: reconcile.Drifted, Error: big}
		for j := range 100 {
			o.Drift = append(o.Drift, reconcile.FieldDrift{Path: fmt.Sprintf(".data.k%d", j), Desired: big, Live: big, Manager: big})
		}
		objects = append(objects, o)
	}
	st := &agentv1.AssignmentStatus{}
	fillStatus(st, &reconcile.Result{Objects: objects}, errors.New("3000 objects failed"))
	n := len(st.ObjectDetails)
	if n == 0 || n > maxObjectDetails || int(st.ObjectDetailsOmitted) != len(objects)-n {
		t.Fatalf("%d details, %d omitted of %d objects; want at most %d with the rest counted", n, st.ObjectDetailsOmitted, len(objects), maxObjectDetails)
	}
	if size := proto.Size(st); size > maxDetailBytes+4096 {
		t.Errorf("status is %d bytes; want the details within %d", size, maxDetailBytes)
	}
	d := st.ObjectDetails[0]
	if len(d.Drift) != maxDetailFields || d.FieldsOmitted != 100-maxDetailFields {
		t.Errorf("%d drift fields, %d omitted; want %d and the rest counted", len(d.Drift), d.FieldsOmitted, maxDetailFields)
	}
	for _, s := range []string{d.Error, d.Drift[0].Desired, d.Drift[0].Live, d.Drift[0].Manager} {
		if !utf8.ValidString(s) || !strings.HasSuffix(s, "…") || len(s) > maxDetailMessage {
			t.Errorf("a long value was not cut on a rune boundary with a mark: %d bytes, ends %q", len(s), s[max(0, len(s)-8):])
		}
	}
	if len(d.Drift[0].Desired) > maxDetailValue {
		t.Errorf("a drift value of %d bytes; want at most %d", len(d.Drift[0].Desired), maxDetailValue)
	}
	if _, err := proto.Marshal(st); err != nil {
		t.Errorf("the bounded status does not encode: %v", err)
	}
}
