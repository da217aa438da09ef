package v1alpha1

import "time"

// APIVersion is the apiVersion of every fleet configuration object.
const APIVersion = "flotilla.dev/v1alpha1"

// ObjectMeta is the part of Kubernetes metadata fleet objects use.
type ObjectMeta struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Duration is a time.Duration written as "1m", "30s" (Go duration syntax) in YAML and JSON.
type Duration struct{ time.Duration }

// Source is where configuration lives. Resolved once by the hub, never once per cluster.
type Source struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"` // "Source"
	Metadata   ObjectMeta `json:"metadata"`
	Spec       SourceSpec `json:"spec"`
}

// SourceSpec: exactly one of the kinds of source: a Git repository, a Helm chart or an OCI
// artifact.
type SourceSpec struct {
	Git  *GitSource  `json:"git,omitempty"`
	Helm *HelmSource `json:"helm,omitempty"`
	OCI  *OCISource  `json:"oci,omitempty"`
	// Interval between polls. Default 1m.
	Interval Duration `json:"interval,omitzero"`
}

// GitSource is a Git repository and which revision of it to follow. At most one of Branch,
// Tag, Semver and Commit; none means the remote's default branch (HEAD).
type GitSource struct {
	// URL: https://, http:// or file:// (and plain paths, taken as file URLs).
	URL    string `json:"url"`
	Branch string `json:"branch,omitempty"`
	Tag    string `json:"tag,omitempty"`
	// Semver is a range ("^1.2", ">=1.0.0 <2.0.0"): the highest tag that satisfies it.
	Semver string `json:"semver,omitempty"`
	Commit string `json:"commit,omitempty"`
	// CredentialsFile names a file on the hub holding credentials for URL: see
	// SecretFile docs (token, basic auth, or an SSH key). Honoured only where the hub's
	// operator allows it; Credentials is the way to name credentials.
	CredentialsFile string `json:"credentialsFile,omitempty"`
	// Credentials names credentials the hub's operator configured (--credentials-config),
	// with the hosts they may be sent to.
	Credentials string `json:"credentials,omitempty"`
	// Insecure allows an http:// URL; without it plain HTTP is refused.
	Insecure bool `json:"insecure,omitempty"`
}

// Release delivers path Path of source Source to the clusters matching Targets.
type Release struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"` // "Release"
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       ReleaseSpec `json:"spec"`
}

// ReleaseSpec follows Flux's Kustomization and Argo CD's sync policy where the meaning is the
// same.
type ReleaseSpec struct {
	Source string `json:"source"`
	// Path inside the source; a Go template over the cluster:
	// "clusters/{{ .Cluster.Labels.region }}/baseline". A label it names that a cluster lacks
	// is an error for that cluster.
	Path    string   `json:"path,omitempty"`
	Targets []Target `json:"targets"`
	// Namespace for namespaced objects without one; created when CreateNamespace.
	Namespace       string `json:"namespace,omitempty"`
	CreateNamespace bool   `json:"createNamespace,omitempty"`
	Prune           bool   `json:"prune,omitempty"`
	SelfHeal        *bool  `json:"selfHeal,omitempty"` // default true
	Wait            bool   `json:"wait,omitempty"`
	// Timeout bounds the health wait. Default 5m.
	Timeout Duration `json:"timeout,omitzero"`
	// Interval between the agent's reconciles (drift checks). Default 10m.
	Interval Duration `json:"interval,omitzero"`
	// Variables for ${var} substitution, beside the cluster's own (cluster_name,
	// cluster_label_<key>).
	Variables map[string]string `json:"variables,omitempty"`
	// Project the release belongs to; default ProjectPlatform.
	Project string `json:"project,omitempty"`
	// Rollout moves new revisions through the release's clusters in waves; nil: every
	// cluster gets a new revision at once.
	Rollout *Rollout `json:"rollout,omitempty"`
	// Suspend stops new revisions of the release everywhere (what runs stays, and drift is
	// still corrected).
	Suspend bool `json:"suspend,omitempty"`
	// Ignore names fields set at creation and never taken back.
	Ignore []IgnoreRule `json:"ignore,omitempty"`
	// RespectManagers names field managers (globs, "*-operator") whose fields Flotilla leaves
	// alone once they have written them. Fields written through the scale subresource are
	// always respected.
	RespectManagers []string `json:"respectManagers,omitempty"`
	// DependsOn names releases that must be Ready on a cluster before this one is applied
	// there.
	DependsOn []string `json:"dependsOn,omitempty"`
	// Adopt takes over, on first apply, objects another tool (Argo CD, Flux, Helm, kubectl)
	// applied, without deleting or re-creating them.
	Adopt *Adopt `json:"adopt,omitempty"`
	// Helm renders Path as a Helm chart. A chart directory (one holding Chart.yaml) is
	// rendered as a chart even without it, with the defaults.
	Helm *ReleaseHelm `json:"helm,omitempty"`
	// Decryption decrypts SOPS-encrypted documents at the agent, with the cluster's own key.
	Decryption *Decryption `json:"decryption,omitempty"`
	// RenderBudget is what the release's renders may use and produce, where it needs other
	// bounds than its project's: each field set may be at most the project's maximum (a
	// release asking more is not scheduled). Unset fields: the project's maximum.
	RenderBudget *RenderBudget `json:"renderBudget,omitempty"`
}

// Adopt names the field managers whose fields a release takes over, and what of the old
// tool's bookkeeping goes with them.
type Adopt struct {
	// FromManagers are field managers ("argocd-controller", "kustomize-controller",
	// "helm-controller", "kubectl-client-side-apply", "helm"): the fields they own on the
	// release's objects become Flotilla's. An object one of them wrote within the release's
	// interval is refused: stop that tool first.
	FromManagers []string `json:"fromManagers"`
	// HelmRelease, when set, also removes Helm's ownership marks (app.kubernetes.io/managed-by:
	// Helm, meta.helm.sh/release-name and -namespace) and deletes that Helm release's
	// storage Secrets (sh.helm.release.v1.NAME.vN in HelmReleaseNamespace, default the
	// release's namespace), so that `helm` no longer believes it manages the objects.
	HelmRelease          string `json:"helmRelease,omitempty"`
	HelmReleaseNamespace string `json:"helmReleaseNamespace,omitempty"`
}

// ProjectPlatform is the built-in project of releases that name none: it allows everything
// and applies with the agent's own identity, the platform team's golden path. A fleet may
// define a Project of that name to narrow it.
const ProjectPlatform = "platform"

// Project bounds what its releases may use, target and touch.
type Project struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"` // "Project"
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       ProjectSpec `json:"spec"`
}

// ProjectSpec: every list empty means "nothing" except where noted.
type ProjectSpec struct {
	// Sources its releases may use: Source names, or URL patterns with "*"
	// ("https://git.example.com/team-a/*").
	Sources []string `json:"sources,omitempty"`
	// ClusterSelector bounds the clusters its releases may target; a release's targets are
	// intersected with it. Empty: every cluster.
	ClusterSelector LabelSelector `json:"clusterSelector,omitzero"`
	// Namespaces its objects may live in: names and globs ("team-a-*"). A release's default
	// namespace must be among them.
	Namespaces []string `json:"namespaces,omitempty"`
	// Kinds allowed and denied. Namespaced kinds are allowed unless denied; cluster-scoped
	// kinds are denied unless allowed by name; RBAC kinds that grant beyond the project,
	// admission webhooks and CRDs are denied by default.
	Kinds ProjectKinds `json:"kinds,omitzero"`
	// ServiceAccount in each cluster whose identity applies, prunes and reads the project's
	// objects: the agent impersonates it. Required for every project but platform.
	ServiceAccount *ServiceAccountRef `json:"serviceAccount,omitempty"`
	// Fleet is the tenant's own repository of Sources and Releases, read like the main fleet
	// and validated against this project.
	Fleet *ProjectFleet `json:"fleet,omitempty"`
	// RenderBudget is the most its releases' renders may use and produce. It may only lower
	// the hub's defaults (a field above the hub's is held at the hub's). Unset fields: the
	// hub's defaults.
	RenderBudget *RenderBudget `json:"renderBudget,omitempty"`
}

// ProjectKinds lists group/kinds; "*" as group or kind matches any.
type ProjectKinds struct {
	Allow []GroupKind `json:"allow,omitempty"`
	Deny  []GroupKind `json:"deny,omitempty"`
}

// GroupKind names a kind: group "" is the core group.
type GroupKind struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
}

// ServiceAccountRef names a ServiceAccount.
type ServiceAccountRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// ProjectFleet is a tenant's fleet repository.
type ProjectFleet struct {
	URL         string `json:"url"`
	Branch      string `json:"branch,omitempty"`
	Path        string `json:"path,omitempty"`
	Credentials string `json:"credentials,omitempty"`
	Insecure    bool   `json:"insecure,omitempty"`
}

// Target selects clusters.
type Target struct {
	Selector LabelSelector `json:"selector"`
}

// LabelSelector matches clusters whose labels include every MatchLabels pair. An empty
// selector matches every cluster.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// Matches reports whether labels include every MatchLabels pair. A label that is absent does
// not match, even when the selector wants the empty value. This is the one matcher: the
// scheduler's targets and a notification's clusterSelector both use it.
func (s LabelSelector) Matches(labels map[string]string) bool {
	for k, want := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != want {
			return false
		}
	}
	return true
}

// Fleet is a whole fleet configuration.
type Fleet struct {
	Sources       []Source       `json:"sources"`
	Releases      []Release      `json:"releases"`
	Notifications []Notification `json:"notifications,omitempty"`
	Projects      []Project      `json:"projects,omitempty"`
	Windows       []Window       `json:"windows,omitempty"`
}
