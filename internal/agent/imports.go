package agent

import (
	_ "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	_ "github.com/fluxcd/pkg/envsubst"
	_ "github.com/fluxcd/pkg/ssa"
	_ "github.com/google/go-cmp/cmp"
	_ "sigs.k8s.io/controller-runtime/pkg/client"
	_ "sigs.k8s.io/kustomize/api/krusty"
)
