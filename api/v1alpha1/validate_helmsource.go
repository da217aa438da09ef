package v1alpha1

// validateHelmSource checks Source.spec.helm.
func validateHelmSource(h *HelmSource, add func(field, msg string)) {
	if h.Repository == "" {
		add("spec.helm.repository", "must be set: https://... (a chart repository) or oci://registry/path")
	}
	if h.Chart == "" {
		add("spec.helm.chart", "must be set")
	}
}
