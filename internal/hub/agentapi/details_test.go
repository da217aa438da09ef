package agentapi

import (
	"fmt"
	"strings"
	"testing"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// agentSized is a status at the agent's own bounds (internal/agent, details.go: 100 objects,
// 32 entries each, values of 256 bytes, messages of 1 KiB, 64 KiB of detail in all), which
// the hub must accept.
func agentSized() *agentv1.AssignmentStatus {
	st := &agentv1.AssignmentStatus{Release: "web"}
	v, msg := strings.Repeat("v", 256), strings.Repeat("m", 1024)
	for i := range 100 {
		d := &agentv1.ObjectDetail{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: fmt.Sprintf("cm-%d", i), Action: "drifted"}
		if i < 3 { // the largest objects the agent sends, three of them within 64 KiB
			d.Error, d.HealthMessage = msg, msg
			for j := range 32 {
				d.Drift = append(d.Drift, &agentv1.FieldDrift{Path: fmt.Sprintf(".data.k%d", j), Desired: v, Live: v})
			}
		}
		st.ObjectDetails = append(st.ObjectDetails, d)
		st.Conflicts = append(st.Conflicts, msg)
	}
	return st
}

func TestCheckStatus(t *testing.T) {
	t.Parallel()
	if err := checkStatus(agentSized()); err != nil {
		t.Fatalf("a status within the agent's bounds was refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(st *agentv1.AssignmentStatus)
		want   string
	}{
		{"too many objects", func(st *agentv1.AssignmentStatus) {
			for len(st.ObjectDetails) <= maxObjectDetails {
				st.ObjectDetails = append(st.ObjectDetails, &agentv1.ObjectDetail{Kind: "ConfigMap", Name: "x"})
			}
		}, `release "web": 201 object details; at most 200`},
		{"a long live value", func(st *agentv1.AssignmentStatus) {
			st.ObjectDetails[2].Drift[2].Live = strings.Repeat("x", maxDetailString+1)
		}, `release "web": object ConfigMap/cm-2 in namespace "apps": drift 2 live value: 4097 bytes; at most 4096`},
		{"too many fields", func(st *agentv1.AssignmentStatus) {
			for range maxDetailFields {
				st.ObjectDetails[0].Conflicts = append(st.ObjectDetails[0].Conflicts, &agentv1.FieldConflict{Field: ".data.x", Owner: "m"})
			}
		}, `release "web": object ConfigMap/cm-0 in namespace "apps": 96 drift and conflict entries; at most 64`},
		{"a long conflict text", func(st *agentv1.AssignmentStatus) {
			st.Conflicts[7] = strings.Repeat("c", maxDetailString+1)
		}, `release "web": conflict 7: 4097 bytes; at most 4096`},
		{"too many bytes in all", func(st *agentv1.AssignmentStatus) {
			for _, d := range st.ObjectDetails {
				d.Error = strings.Repeat("e", maxDetailString)
				d.Name = strings.Repeat("n", 253)
				d.HealthMessage = d.Error
			}
		}, `object details of at least`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := agentSized()
			tc.change(st)
			err := checkStatus(st)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkStatus = %v; want an error with %q", err, tc.want)
			}
		})
	}
}
