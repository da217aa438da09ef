package v1alpha1

// validateOCISource checks Source.spec.oci.
func validateOCISource(s *OCISource, add func(field, msg string)) {
	if s.URL == "" {
		add("spec.oci.url", "must be set: oci://registry/repository")
	}
}
