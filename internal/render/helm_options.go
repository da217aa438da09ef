package render

// Helm says how to render a chart directory.
type Helm struct {
	// ReleaseName is .Release.Name; default "release-name", as helm template's.
	ReleaseName string
	// Namespace is .Release.Namespace; default "default".
	Namespace string
	// ValuesFiles are merged in order, then Values over them, then Set over both, as helm's
	// -f, and --set. ${var} references in ValuesFiles and Values are substituted with
	// Options.Vars before they are parsed; the chart's output is never substituted.
	ValuesFiles []ValuesFile
	// Values is one YAML or JSON document.
	Values []byte
	// Set are --set expressions (flotilla render).
	Set []string
	// IncludeCRDs renders the chart's crds/ directories (its dependencies' too) first.
	IncludeCRDs bool
	// KubeVersion ("v1.31.2") and APIVersions ("apps/v1", "apps/v1/Deployment") are
	// .Capabilities: the agent reads them from its cluster. Empty: Helm's defaults.
	KubeVersion string
	APIVersions []string
	// PostRender patches the chart's output with kustomize patches, in order.
	PostRender []Patch

	// lim replaces defaultHelmLimits: a test hook (helm_export_test.go).
	lim *helmLimits
	// started, when set, is called as Helm starts rendering: a test hook, to stop a render
	// midway without depending on how long it takes.
	started func()
}

// ValuesFile is one values document and the name errors give it ("values/prod.yaml").
type ValuesFile struct {
	Name string
	Data []byte
}

// Patch is one kustomize patch (strategic merge or JSON 6902) of a chart's output.
type Patch struct {
	// Name says where the patch came from, for errors.
	Name   string
	Patch  []byte
	Target *PatchTarget
}

// PatchTarget is kustomize's patch selector.
type PatchTarget struct {
	Group, Version, Kind, Name, Namespace, LabelSelector, AnnotationSelector string
}

// Decryptor decrypts SOPS-encrypted documents.
type Decryptor interface {
	// Decrypt returns the plaintext of one encrypted document, format "yaml" or "json"; file
	// is the document's file relative to the artifact root, for errors.
	Decrypt(file string, doc []byte, format string) ([]byte, error)
}

// helmLimits bound what rendering a chart may read and produce; see defaultHelmLimits.
type helmLimits struct {
	chartBytes  int64 // the chart's files, archives of subcharts counted uncompressed
	chartFiles  int   // the chart's files, those in subchart archives included
	valuesBytes int64 // ValuesFiles, Values and Set together, after substitution
	outputBytes int64 // the rendered manifests and hooks
}

// defaultHelmLimits are far above real charts (the largest public charts are a few MiB with
// a few hundred files, their output a few MiB) and far below what would hurt an agent.
var defaultHelmLimits = helmLimits{
	chartBytes:  20 << 20,
	chartFiles:  5000,
	valuesBytes: 4 << 20,
	outputBytes: 64 << 20,
}

func (h Helm) limits() helmLimits {
	if h.lim != nil {
		return *h.lim
	}
	return defaultHelmLimits
}
