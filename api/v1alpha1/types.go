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

// SourceSpec: exactly one of the kinds of source (today Git).
type SourceSpec struct {
	Git *GitSource `json:"git,omitempty"`
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
	// SecretFile docs (token, basic auth, or an SSH key).
	CredentialsFile string `json:"credentialsFile,omitempty"`
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
}
