package v1alpha1

// This file holds the kinds of delivery beyond plain manifests and kustomize from Git: Helm
// chart sources and Helm releases, OCI artifact sources verified with cosign, and SOPS
// decryption at the agent.

// HelmSource is a chart in a Helm repository: an https:// chart repository (one with an
// index.yaml) or an OCI registry (oci://registry/path, the chart being path/<chart>). The hub
// fetches the chart and the dependencies its Chart.lock names and packs them as an artifact
// whose root is the chart directory, so agents never contact a chart repository.
type HelmSource struct {
	Repository string `json:"repository"`
	Chart      string `json:"chart"`
	// Version is a semver range ("^6.5", ">=1.0.0 <2.0.0") or an exact version; the newest
	// version satisfying it is used. Empty: the newest version that is not a pre-release.
	Version string `json:"version,omitempty"`
	// Credentials names credentials the hub's operator configured (--credentials-config),
	// with the hosts they may be sent to.
	Credentials string `json:"credentials,omitempty"`
	// Insecure allows an http:// repository (or a plain-HTTP registry); without it both are
	// refused.
	Insecure bool `json:"insecure,omitempty"`
	// DependencyHosts are the hosts, beside the repository's own, from which the hub fetches
	// the dependencies the chart names: "charts.example.com" (any port), "host:8443" (that
	// port), "*.example.com" (any subdomain). A dependency elsewhere is refused before it is
	// contacted. A tenant fleet repository may not set it.
	DependencyHosts []string `json:"dependencyHosts,omitempty"`
}

// OCISource is an OCI artifact holding manifests, as `flux push artifact` and `oras push`
// produce it: one tar.gz layer. At most one of Tag, Semver and Digest; none means "latest".
type OCISource struct {
	// URL is oci://registry[:port]/repository.
	URL    string `json:"url"`
	Tag    string `json:"tag,omitempty"`
	Semver string `json:"semver,omitempty"`
	// Digest pins the manifest: sha256:<hex>.
	Digest string `json:"digest,omitempty"`
	// Verify, when set, refuses any artifact that is not signed as it says.
	Verify      *OCIVerify `json:"verify,omitempty"`
	Credentials string     `json:"credentials,omitempty"`
	Insecure    bool       `json:"insecure,omitempty"`
}

// OCIVerify says how an OCI artifact must be signed.
type OCIVerify struct {
	Cosign *CosignVerify `json:"cosign,omitempty"`
}

// CosignVerify: the manifest digest must carry a cosign signature by one of these keys. Keys
// are named, not given: the hub's operator configures them (flotilla hub --verify-key
// NAME=FILE), so a fleet repository cannot bring its own trust.
type CosignVerify struct {
	PublicKeys []string `json:"publicKeys"`
}

// ReleaseHelm renders the release's path as a Helm chart at the agent, in-process, with the
// cluster's Kubernetes version and API capabilities.
type ReleaseHelm struct {
	// ReleaseName is .Release.Name; default the Release's name.
	ReleaseName string `json:"releaseName,omitempty"`
	// ValuesFiles are merged in order, then Values over them (as helm -f ... --set).
	ValuesFiles []FileRef `json:"valuesFiles,omitempty"`
	// Values may use the cluster's variables (${cluster_name}, ${cluster_label_region}) and
	// the release's; they are substituted before rendering, never in the chart's output.
	Values map[string]any `json:"values,omitempty"`
	// IncludeCRDs applies the chart's crds/ directory (in the CRD stage). Default true.
	IncludeCRDs *bool `json:"includeCRDs,omitempty"`
	// PostRender patches the chart's output with kustomize patches.
	PostRender *PostRender `json:"postRender,omitempty"`
}

// IncludeCRDsOrDefault is IncludeCRDs with its default (true).
func (h *ReleaseHelm) IncludeCRDsOrDefault() bool {
	return h == nil || h.IncludeCRDs == nil || *h.IncludeCRDs
}

// FileRef names a file inside a source's artifact.
type FileRef struct {
	// Source defaults to the release's own source.
	Source string `json:"source,omitempty"`
	Path   string `json:"path"`
}

// PostRender is a list of kustomize patches applied to a chart's output.
type PostRender struct {
	Patches []PostRenderPatch `json:"patches"`
}

// PostRenderPatch is one kustomize patch (strategic merge or JSON 6902), inline (Patch) or in
// a file of a source (Path, with Source defaulting to the release's), with an optional target
// selector, as in a kustomization's patches field.
type PostRenderPatch struct {
	Patch  string       `json:"patch,omitempty"`
	Path   string       `json:"path,omitempty"`
	Source string       `json:"source,omitempty"`
	Target *PatchTarget `json:"target,omitempty"`
}

// PatchTarget selects the objects a patch applies to (kustomize's selector).
type PatchTarget struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Name               string `json:"name,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// Decryption says how the agent decrypts encrypted documents after rendering and before
// applying.
type Decryption struct {
	// Provider: "sops" (age recipients: each cluster's own key, see flotilla secret encrypt).
	Provider string `json:"provider"`
}

// DecryptionSOPS is the one Decryption.Provider.
const DecryptionSOPS = "sops"
