package desired

import (
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/project"
	"github.com/flotilla/flotilla/internal/window"
)

// Document is one cluster's desired state: what is assigned, and the tombstones of what left.
// The hub stores it as [Encode] writes it; the agent receives it as [ToProto] sends it.
type Document struct {
	Assignments []Assignment `json:"assignments"`
	// Removed holds tombstones oldest first; never a release that Assignments holds.
	Removed []Tombstone `json:"removed,omitempty"`
	// Gates are the windows, freezes and suspensions that apply to the cluster.
	Gates []window.Gate `json:"gates,omitempty"`
	// Syncs are the pending requests to reconcile now.
	Syncs []SyncRequest `json:"syncs,omitempty"`
}

// State is a document as an agent holds it: with the cluster it is for and its generation,
// which the hub keeps beside the document rather than in it.
type State struct {
	Cluster    string
	Generation int64
	// ExplicitRemovals is false for a document from a hub older than tombstones: it cannot
	// say that a release left on purpose, so the agent removes nothing it drops.
	ExplicitRemovals bool
	Document
}

// Assignment is one release for one cluster at one artifact, with that cluster's resolved
// values: what the agent executes and reports on.
type Assignment struct {
	Release  string `json:"release"`
	Source   string `json:"source"`
	URL      string `json:"url"`
	Revision string `json:"revision"`
	Digest   string `json:"digest"`
	// Path inside the artifact, resolved for this cluster; "" is the artifact's root.
	Path            string `json:"path"`
	Namespace       string `json:"namespace,omitempty"`
	CreateNamespace bool   `json:"createNamespace,omitempty"`
	Prune           bool   `json:"prune"`
	SelfHeal        bool   `json:"selfHeal"`
	Wait            bool   `json:"wait"`
	// Timeout and Interval have their defaults applied; they are encoded as nanoseconds, and
	// sent to the agent in whole seconds.
	Timeout  time.Duration `json:"timeout"`
	Interval time.Duration `json:"interval"`
	// Vars are the variables for substitution: the cluster's, then the release's where the
	// cluster has none of that name (see internal/hub/schedule). Never nil once decoded.
	Vars map[string]string `json:"vars"`
	// Project holds the rules of the release's project, which the agent checks every object
	// against and whose ServiceAccount it impersonates; nil for the built-in platform
	// project when the fleet does not define one (everything allowed, the agent's own
	// identity). Documents stored before projects have none.
	Project *project.Rules `json:"project,omitempty"`
	// Ignore, RespectManagers and DependsOn are the release's, as written.
	Ignore          []v1alpha1.IgnoreRule `json:"ignore,omitempty"`
	RespectManagers []string              `json:"respectManagers,omitempty"`
	DependsOn       []string              `json:"dependsOn,omitempty"`
	Adopt           *v1alpha1.Adopt       `json:"adopt,omitempty"`
	// Rollout is set while the release's rollout holds this cluster at an earlier revision
	// than the newest: a line for status ("wave eu waits for canary").
	Rollout string `json:"rollout,omitempty"`
	// SourceDigest is, for a release with a rollout whose Digest is a per-path artifact
	// (internal/hub/pathpack), the source artifact it was packed from: what the rollout
	// compares across clusters, where every path has its own artifact. Hub only: it is not
	// sent to agents. "" when Digest is the source's artifact.
	SourceDigest string `json:"sourceDigest,omitempty"`
	// Helm renders Path as a chart (Release.spec.helm, files resolved); nil: the agent renders
	// Path as manifests, kustomize or (a directory with Chart.yaml) a chart with defaults.
	Helm *Helm `json:"helm,omitempty"`
	// Decryption is Release.spec.decryption.provider ("sops"), or "".
	Decryption string `json:"decryption,omitempty"`
	// RenderBudget is what the release's renders run under: the hub's defaults, lowered by
	// its project, as the release asks within the project's maximum. nil or a zero field: the
	// agent's defaults. Its durations are sent to the agent in whole milliseconds.
	RenderBudget *v1alpha1.BudgetLimits `json:"renderBudget,omitempty"`
}

// Digests are every artifact the assignment needs: its own and those of the files its Helm
// settings name (which an agent may therefore download).
func (a Assignment) Digests() []string {
	return append([]string{a.Digest}, a.Helm.Digests()...)
}

// Helm is Release.spec.helm with every file it names resolved to an artifact.
type Helm struct {
	ReleaseName string    `json:"releaseName,omitempty"`
	ValuesFiles []FileRef `json:"valuesFiles,omitempty"`
	// Values are the release's inline values as written; the agent substitutes variables.
	Values      map[string]any    `json:"values,omitempty"`
	IncludeCRDs bool              `json:"includeCRDs"`
	PostRender  []PostRenderPatch `json:"postRender,omitempty"`
}

// Digests are the artifacts the Helm settings name (values and patch files), besides the
// release's own; none for nil.
func (h *Helm) Digests() []string {
	if h == nil {
		return nil
	}
	var out []string
	for _, f := range h.ValuesFiles {
		out = append(out, f.Digest)
	}
	for _, p := range h.PostRender {
		if p.File != nil {
			out = append(out, p.File.Digest)
		}
	}
	return out
}

// FileRef is a file in the artifact of a source at the revision the hub resolved.
type FileRef struct {
	Source   string `json:"source"`
	Revision string `json:"revision"`
	Digest   string `json:"digest"`
	Path     string `json:"path"`
}

// PostRenderPatch is a kustomize patch of a chart's output, inline or in File.
type PostRenderPatch struct {
	Patch  string                `json:"patch,omitempty"`
	File   *FileRef              `json:"file,omitempty"`
	Target *v1alpha1.PatchTarget `json:"target,omitempty"`
}

// Reasons a release leaves a cluster: the only two the hub can name.
const (
	// ReasonReleaseDeleted: the release is no longer in the fleet configuration.
	ReasonReleaseDeleted = "release-deleted"
	// ReasonNotSelected: the release's targets no longer select the cluster (a relabel, a
	// changed selector).
	ReasonNotSelected = "not-selected"
)

// Tombstone records that a release left a cluster: the only thing that lets an agent prune a
// whole release.
type Tombstone struct {
	Release string `json:"release"`
	// Reason is ReasonReleaseDeleted or ReasonNotSelected.
	Reason string `json:"reason"`
	// FleetRevision is the fleet configuration revision whose scheduling removed the release.
	FleetRevision string `json:"fleetRevision"`
	// Revision and Digest are what the release was at when it left.
	Revision string `json:"revision,omitempty"`
	Digest   string `json:"digest,omitempty"`
	// Actor is who made the change that removed it, when the hub knows (a relabel).
	Actor string `json:"actor,omitempty"`
}

// SyncRequest asks the agent to reconcile now; see the SyncRequest message.
type SyncRequest struct {
	ID       string `json:"id"`
	Release  string `json:"release,omitempty"`
	Override bool   `json:"override,omitempty"`
	Actor    string `json:"actor,omitempty"`
}
