package reconcile

import (
	"fmt"
	"strings"
	"time"
)

// Action is what a reconcile did, or with DryRun would do, to one object.
type Action string

const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	// Healed: the object had drifted from its unchanged desired state and was restored.
	Healed Action = "healed"
	// Drifted: the object has drifted and SelfHeal is off, so it was left as it is.
	Drifted Action = "drifted"
	// Conflict: another manager or assignment owns what this object declares; left alone.
	Conflict Action = "conflict"
	// Rejected: the API server's dry-run refused the object; nothing of the set was applied.
	Rejected Action = "rejected"
	Pruned   Action = "pruned"
	// PruneSkipped: the object left the set but is annotated flotilla.dev/prune: disabled.
	PruneSkipped Action = "prune skipped"
	// PruneDeferred: the object left the set while prune is held (Options.DeferPrune); it
	// stays in the inventory, so that a later reconcile prunes it.
	PruneDeferred Action = "prune deferred"
)

// ObjectRef names one object.
type ObjectRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is the kubectl form: "deployment.apps/web", "configmap/settings".
func (r ObjectRef) String() string {
	k := strings.ToLower(r.Kind)
	if r.Group != "" {
		k += "." + r.Group
	}
	return k + "/" + r.Name
}

// id is the inventory key: namespace_name_group_kind, as in Flux's inventory.
func (r ObjectRef) id() string {
	return r.Namespace + "_" + r.Name + "_" + r.Group + "_" + r.Kind
}

// Health is an object's kstatus after the wait.
type Health struct {
	Status  string `json:"status"` // Current, InProgress, Failed, Terminating, NotFound, Unknown
	Message string `json:"message,omitempty"`
}

// ObjectResult is what happened to one object.
type ObjectResult struct {
	ObjectRef
	Action Action `json:"action"`
	// DriftPaths are the field paths that differed from the desired state (Healed, Drifted).
	DriftPaths []string `json:"driftPaths,omitempty"`
	// ConflictWith names the other field managers or assignment (Conflict), and
	// ConflictPaths the contested fields.
	ConflictWith  []string `json:"conflictWith,omitempty"`
	ConflictPaths []string `json:"conflictPaths,omitempty"`
	// Conflicts pairs each contested field with its owner (Conflict).
	Conflicts []FieldConflict `json:"conflicts,omitempty"`
	// Drift is DriftPaths with the desired and live values, for showing as a diff.
	Drift  []FieldDrift `json:"drift,omitempty"`
	Health *Health      `json:"health,omitempty"`
	// Error is why applying this object failed, if it did.
	Error string `json:"error,omitempty"`
	// AdoptedFrom are the field managers whose fields flotilla took over (Adopted).
	AdoptedFrom []string `json:"adoptedFrom,omitempty"`
}

// DeletedPath is the drift path of an object that was applied and then deleted by someone
// else: the whole object is missing.
const DeletedPath = "(deleted)"

// FieldConflict is one field an object declares that another owner holds.
type FieldConflict struct {
	Field string `json:"field"` // ".data.logEndpoint"; "" when the whole object is claimed
	Owner string `json:"owner"` // `field manager "team-x"`, `assignment "other"`
}

// FieldDrift is one drifted field: the desired and live values as JSON, cut to
// maxDriftValue bytes, "" when absent. Values of Secrets are never carried.
type FieldDrift struct {
	Path    string `json:"path"`
	Desired string `json:"desired,omitempty"`
	Live    string `json:"live,omitempty"`
	// Manager is the field manager that wrote the live value, from the object's
	// managedFields ("kubectl-edit", "kube-controller-manager"); "" when the field is gone
	// live or no entry names it.
	Manager string `json:"manager,omitempty"`
}

// ConflictText says who holds what, for people:
// `configmap/settings in namespace "ns": .data.logEndpoint owned by field manager "team-x"`.
func (o ObjectResult) ConflictText() string {
	where := o.ObjectRef.String()
	if o.Namespace != "" {
		where += fmt.Sprintf(" in namespace %q", o.Namespace)
	}
	if len(o.Conflicts) == 0 {
		return where + ": owned by " + strings.Join(o.ConflictWith, ", ")
	}
	parts := make([]string, len(o.Conflicts))
	for i, c := range o.Conflicts {
		if c.Field == "" {
			parts[i] = "owned by " + c.Owner
		} else {
			parts[i] = c.Field + " owned by " + c.Owner
		}
	}
	return where + ": " + strings.Join(parts, "; ")
}

// driftTexts are the drifted paths, each with the manager that wrote its live value when
// known: ".spec.replicas (kubectl-patch)".
func (o ObjectResult) driftTexts() []string {
	if len(o.Drift) == 0 {
		return o.DriftPaths
	}
	out := make([]string, len(o.Drift))
	for i, f := range o.Drift {
		out[i] = f.Path
		if f.Manager != "" {
			out[i] += " (" + f.Manager + ")"
		}
	}
	return out
}

// Requests counts the API requests a reconcile sent.
type Requests struct {
	Total   int64 `json:"total"`
	Reads   int64 `json:"reads"`   // GET and LIST, discovery included
	DryRuns int64 `json:"dryRuns"` // server-side dry-run applies
	Writes  int64 `json:"writes"`  // applies, deletes and inventory writes
}

// Result is the outcome of one reconcile, for people (String) and programs (JSON).
type Result struct {
	Name     string         `json:"name"`
	DryRun   bool           `json:"dryRun,omitempty"`
	Objects  []ObjectResult `json:"objects"`
	Duration time.Duration  `json:"-"`
	// Seconds is Duration for JSON readers.
	Seconds  float64  `json:"durationSeconds"`
	Requests Requests `json:"requests"`
	// Ready is set when Wait was on: every object is Current.
	Ready *bool `json:"ready,omitempty"`
	// Error is the failure, if any, in words; Reconcile also returns it.
	Error string `json:"error,omitempty"`
	// HelmStorageDeleted names the storage Secrets of the adopted Helm release deleted.
	HelmStorageDeleted []string `json:"helmStorageDeleted,omitempty"`
}

// Count returns how many objects had action a.
func (r *Result) Count(a Action) int {
	n := 0
	for _, o := range r.Objects {
		if o.Action == a {
			n++
		}
	}
	return n
}

// Find returns the result for the object of that kind, namespace and name, or nil.
func (r *Result) Find(kind, namespace, name string) *ObjectResult {
	for i, o := range r.Objects {
		if o.Kind == kind && o.Namespace == namespace && o.Name == name {
			return &r.Objects[i]
		}
	}
	return nil
}

// Failed reports whether the reconcile needs attention: an error, a conflict, or an object
// that is not healthy after the wait.
func (r *Result) Failed() bool {
	return r.Error != "" || r.Count(Conflict) > 0 || (r.Ready != nil && !*r.Ready)
}

// String renders the result like kubectl: one line per object, then drift, conflicts and
// health.
func (r *Result) String() string {
	var b strings.Builder
	suffix := ""
	if r.DryRun {
		suffix = " (dry run)"
	}
	for _, o := range r.Objects {
		fmt.Fprintf(&b, "%s %s%s\n", o.ObjectRef, o.Action, suffix)
	}
	for _, o := range r.Objects {
		if len(o.DriftPaths) > 0 {
			verb := "healed"
			if o.Action == Drifted {
				verb = "not healed (self-heal off)"
			}
			fmt.Fprintf(&b, "drift: %s %s: %s\n", o.ObjectRef, verb, strings.Join(o.driftTexts(), ", "))
		}
	}
	for _, o := range r.Objects {
		if o.Action == Adopted {
			fmt.Fprintf(&b, "adopted: %s from %s\n", o.ObjectRef, strings.Join(o.AdoptedFrom, ", "))
		}
	}
	for _, o := range r.Objects {
		if o.Action == Conflict {
			fmt.Fprintf(&b, "conflict: %s; left alone, use --force to take it\n", o.ConflictText())
		}
	}
	if r.Ready != nil {
		for _, o := range r.Objects {
			if o.Health != nil && o.Health.Status != "Current" {
				fmt.Fprintf(&b, "health: %s %s: %s\n", o.ObjectRef, o.Health.Status, o.Health.Message)
			}
		}
		if *r.Ready {
			b.WriteString("health: all objects ready\n")
		}
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", r.Error)
	}
	return b.String()
}
