//go:build tools

// Package helm pins the reference `helm` CLI that the chart rendering tests compare
// flotilla's in-process rendering with (internal/agent/render/helm_template_test.go). The
// build tag keeps the import out of every normal build; `go build helm.sh/helm/v3/cmd/helm`
// here is what produces bin/helm (see build.sh and the Makefile's bin/helm target).
package helm

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
