package hubclient

import (
	"context"
	"net/http"
)

// PlanRequest is the body of POST /api/v1/plan (`flotilla plan`): a candidate fleet
// configuration, and sources to read at other refs, for a plan only.
type PlanRequest struct {
	// Files are the candidate's configuration files by slash-separated path (what `flotilla
	// plan --fleet DIR` uploads); exactly one of Files and Ref is set.
	Files map[string]string `json:"files,omitempty"`
	// Ref is a branch or a full commit of the hub's fleet repository (`--fleet ref:BRANCH`).
	Ref string `json:"ref,omitempty"`
	// Sources reads each named source at another branch or full commit for this plan
	// (`--source NAME=REF`). Nothing is stored or served to agents.
	Sources map[string]string `json:"sources,omitempty"`
}

// Kinds of plan problems.
const (
	// PlanInvalid: the candidate configuration does not load (File and Line say where).
	PlanInvalid = "invalid"
	// PlanSchedule: a release cannot be scheduled as written, or breaks its project's rules.
	PlanSchedule = "schedule"
	// PlanRender: a release does not render for a cluster (an undefined variable, a
	// manifest that does not parse).
	PlanRender = "render"
	// PlanSource: a source could not be read for the plan.
	PlanSource = "source"
)

// Plan is what a candidate fleet configuration would change on which clusters. Its JSON
// field names are a documented contract for scripts (docs/plan.md).
type Plan struct {
	// Revision is the fleet configuration in force; Candidate names the candidate
	// ("upload", "ref feature@sha1:...").
	Revision  string `json:"revision"`
	Candidate string `json:"candidate"`
	// Changes: applying the candidate would change something on some cluster.
	Changes bool `json:"changes"`
	// Errors: the candidate has problems of its own (invalid, render errors, new
	// scheduling problems); `flotilla plan` exits 2.
	Errors bool `json:"errors"`
	// Scoped: the caller may view some projects only, and the plan shows their releases.
	Scoped  bool        `json:"scoped,omitempty"`
	Summary PlanSummary `json:"summary"`
	// Groups are the changes, one per release and distinct change, each with the clusters
	// that get exactly that change; sorted by release, then first cluster.
	Groups   []PlanGroup   `json:"groups"`
	Problems []PlanProblem `json:"problems"`
	// Truncated says what the hub's limits left out ("12 more groups", ...).
	Truncated []string `json:"truncated,omitempty"`
}

// PlanSummary counts what changes.
type PlanSummary struct {
	Clusters        int `json:"clusters"`        // clusters considered (for a scoped caller: where its releases run or would)
	ClustersChanged int `json:"clustersChanged"` // clusters where anything changes
	Releases        int `json:"releases"`        // releases with a change somewhere
	Gained          int `json:"gained"`          // release-on-cluster assignments gained
	Lost            int `json:"lost"`
	Changed         int `json:"changed"`
	Waiting         int `json:"waiting"` // changed assignments a window or freeze holds back now
}

// Change kinds of a PlanGroup.
const (
	PlanGained  = "gained"
	PlanLost    = "lost"
	PlanChanged = "changed"
)

// PlanGroup is one change of one release, and the clusters that get exactly it.
type PlanGroup struct {
	Release string `json:"release"`
	Change  string `json:"change"` // PlanGained, PlanLost, PlanChanged
	// Clusters that get this change, sorted, at most the hub's limit; ClusterCount counts
	// all of them.
	Clusters     []string `json:"clusters"`
	ClusterCount int      `json:"clusterCount"`
	// Assignment are the settings that change, one line each ("path: apps/a -> apps/b").
	Assignment []string     `json:"assignment,omitempty"`
	Objects    []PlanObject `json:"objects,omitempty"`
	// Waiting says what holds the change back now ("window \"business-hours\" ..."); "".
	Waiting string `json:"waiting,omitempty"`
	// Error is why the release does not render (for the candidate, or what runs now).
	Error string `json:"error,omitempty"`
	// Hash identifies the change: the same on every cluster in the group.
	Hash string `json:"hash"`
}

// Object actions.
const (
	ObjectAdded   = "added"
	ObjectRemoved = "removed"
	ObjectChanged = "changed"
)

// PlanObject is one Kubernetes object that the change adds, removes or changes.
type PlanObject struct {
	Action     string `json:"action"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Diff is a unified diff of the object's YAML (Secret values redacted), cut at the
	// hub's limit.
	Diff string `json:"diff,omitempty"`
}

// PlanProblem is something wrong with the candidate.
type PlanProblem struct {
	Kind    string `json:"kind"` // PlanInvalid, PlanSchedule, PlanRender, PlanSource
	Release string `json:"release,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
	// Existing: the configuration in force has the same problem (not the candidate's
	// doing; it does not make the plan fail).
	Existing bool `json:"existing,omitempty"`
}

// Plan asks the hub what the candidate would change.
func (c *Client) Plan(ctx context.Context, req PlanRequest) (Plan, error) {
	var out Plan
	err := c.do(ctx, http.MethodPost, "/api/v1/plan", req, &out)
	return out, err
}
