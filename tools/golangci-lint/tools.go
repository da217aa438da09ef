//go:build tools

// Package golangcilint pins golangci-lint v2, which `make verify` runs with the configuration in
// .golangci.yml at the repository root. The build tag keeps the import out of every normal
// build; build.sh builds its main package into bin/golangci-lint.
package golangcilint

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)
