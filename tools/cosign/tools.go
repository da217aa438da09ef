//go:build tools

// Package cosign pins the cosign CLI that the tests of OCI sources sign artifacts with: the
// reference implementation of the signatures the hub verifies. The build tag keeps the import
// out of every normal build; build.sh builds its main package into bin/cosign.
package cosign

import (
	_ "github.com/sigstore/cosign/v2/cmd/cosign"
)
