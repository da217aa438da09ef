package v1alpha1

import "fmt"

// validateReleaseHelm checks Release.spec.helm.
func validateReleaseHelm(h *ReleaseHelm, add func(field, msg string)) {
	if h == nil {
		return
	}
	for i, f := range h.ValuesFiles {
		for _, msg := range checkPath(f.Path) {
			add(fmt.Sprintf("spec.helm.valuesFiles[%d].path", i), msg)
		}
	}
}
