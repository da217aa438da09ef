package agent

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/textcut"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Bounds of the per-object detail of one status report, so that a release of thousands of
// broken objects still sends a report of a few dozen KiB. The hub refuses a status beyond its
// own bounds (agentapi's), which are looser than these: an agent within them is never refused.
const (
	// maxObjectDetails is how many objects one status details.
	maxObjectDetails = 100
	// maxDetailBytes bounds the encoded size of one status's details; objects past it are
	// counted in ObjectDetailsOmitted.
	maxDetailBytes = 64 << 10
	// maxDetailFields is how many drift and conflict entries one object carries.
	maxDetailFields = 32
	// maxDetailValue bounds a desired or live value, and a field path (reconcile cuts values
	// to 256 bytes already).
	maxDetailValue = 256
	// maxDetailMessage bounds a health message, an object's error and a conflict's text.
	maxDetailMessage = 1024
	// maxConflictsInError is how many conflicts the status's error names before "and N more".
	maxConflictsInError = 3
)

// needsLook says whether an object goes into the report's detail: it is not Current after the
// wait, drifted (healed or not), in conflict, or failed to apply.
func needsLook(o reconcile.ObjectResult) bool {
	switch {
	case o.Action == reconcile.Pruned || o.Action == reconcile.PruneSkipped || o.Action == reconcile.PruneDeferred:
		return false
	case o.Error != "", o.Action == reconcile.Conflict, o.Action == reconcile.Drifted, o.Action == reconcile.Healed,
		o.Action == reconcile.Adopted: // the hub records the adoption in its audit trail
		return true
	case len(o.DriftPaths) > 0 || len(o.Drift) > 0:
		return true
	}
	return o.Health != nil && o.Health.Status != "Current"
}

// lookOrder ranks what a person debugging the assignment wants first: failures, conflicts,
// failed health, drift left in place, objects still progressing, then healed drift.
func lookOrder(o reconcile.ObjectResult) int {
	switch {
	case o.Error != "":
		return 0
	case o.Action == reconcile.Conflict:
		return 1
	case o.Health != nil && o.Health.Status == "Failed":
		return 2
	case o.Action == reconcile.Drifted:
		return 3
	case o.Health != nil && o.Health.Status != "Current":
		return 4
	default:
		return 5
	}
}

// objectDetails is the detail of the objects that need a look, most urgent first, within the
// bounds above; omitted counts those left out.
func objectDetails(objects []reconcile.ObjectResult) (details []*agentv1.ObjectDetail, omitted int32) {
	var picked []reconcile.ObjectResult
	for _, o := range objects {
		if needsLook(o) {
			picked = append(picked, o)
		}
	}
	sort.SliceStable(picked, func(i, j int) bool { return lookOrder(picked[i]) < lookOrder(picked[j]) })
	size := 0
	for i, o := range picked {
		if len(details) == maxObjectDetails {
			return details, int32(len(picked) - i)
		}
		d := objectDetail(o)
		if size += proto.Size(d); size > maxDetailBytes {
			return details, int32(len(picked) - i)
		}
		details = append(details, d)
	}
	return details, 0
}

func objectDetail(o reconcile.ObjectResult) *agentv1.ObjectDetail {
	d := &agentv1.ObjectDetail{
		Group: o.Group, Version: o.Version, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
		Action: string(o.Action), Error: textcut.Cut(o.Error, maxDetailMessage),
		AdoptedFrom: o.AdoptedFrom,
	}
	if o.Health != nil {
		d.Health, d.HealthMessage = o.Health.Status, textcut.Cut(o.Health.Message, maxDetailMessage)
	}
	drift := o.Drift
	if len(drift) == 0 {
		// A reconcile that has the paths without their values still says which fields moved.
		for _, p := range o.DriftPaths {
			drift = append(drift, reconcile.FieldDrift{Path: p})
		}
	}
	for _, f := range drift {
		if len(d.Drift) == maxDetailFields {
			d.FieldsOmitted++
			continue
		}
		d.Drift = append(d.Drift, &agentv1.FieldDrift{Path: textcut.Cut(f.Path, maxDetailValue), Desired: textcut.Cut(f.Desired, maxDetailValue), Live: textcut.Cut(f.Live, maxDetailValue),
			Manager: textcut.Cut(f.Manager, maxDetailValue)})
	}
	conflicts := o.Conflicts
	if len(conflicts) == 0 && o.Action == reconcile.Conflict {
		for _, w := range o.ConflictWith {
			conflicts = append(conflicts, reconcile.FieldConflict{Owner: w})
		}
	}
	for _, c := range conflicts {
		if len(d.Conflicts) == maxDetailFields {
			d.FieldsOmitted++
			continue
		}
		d.Conflicts = append(d.Conflicts, &agentv1.FieldConflict{Field: textcut.Cut(c.Field, maxDetailValue), Owner: textcut.Cut(c.Owner, maxDetailValue)})
	}
	return d
}

// conflictError is the status's error for an assignment whose only failure is conflicts: it
// names the object, the field and the owner of each, up to maxConflictsInError of them.
func conflictError(conflicts []string) string {
	if len(conflicts) == 1 {
		return "conflict: " + conflicts[0]
	}
	shown := conflicts[:min(len(conflicts), maxConflictsInError)]
	msg := fmt.Sprintf("%d conflicts: %s", len(conflicts), strings.Join(shown, "; "))
	if n := len(conflicts) - len(shown); n > 0 {
		msg += fmt.Sprintf("; and %d more", n)
	}
	return msg
}
