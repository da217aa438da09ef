//go:build tools

// Package sops pins the sops CLI that the secret tests check interoperability with: files it
// encrypts with age recipients decrypt at the agent, and files `flotilla secret encrypt`
// writes decrypt with it. The build tag keeps the import out of every normal build; build.sh
// builds its main package into bin/sops.
package sops

import (
	_ "github.com/getsops/sops/v3/cmd/sops"
)
