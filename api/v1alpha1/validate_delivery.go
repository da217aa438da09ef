package v1alpha1

import "fmt"

// fileRef is a file a release names in another source, with the field that names it.
type fileRef struct{ field, source string }

// fileRefs are the sources a release's Helm values files and post-render patches name
// explicitly (not its own source).
func (s ReleaseSpec) fileRefs() []fileRef {
	if s.Helm == nil {
		return nil
	}
	var out []fileRef
	for i, f := range s.Helm.ValuesFiles {
		if f.Source != "" {
			out = append(out, fileRef{fmt.Sprintf("spec.helm.valuesFiles[%d].source", i), f.Source})
		}
	}
	if s.Helm.PostRender != nil {
		for i, p := range s.Helm.PostRender.Patches {
			if p.Source != "" {
				out = append(out, fileRef{fmt.Sprintf("spec.helm.postRender.patches[%d].source", i), p.Source})
			}
		}
	}
	return out
}

func validateDecryption(d *Decryption, add func(field, msg string)) {
	if d == nil {
		return
	}
	if d.Provider != DecryptionSOPS {
		add("spec.decryption.provider", fmt.Sprintf("must be %q, not %q", DecryptionSOPS, d.Provider))
	}
}
