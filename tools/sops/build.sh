#!/usr/bin/env bash
# Builds bin/sops from the version pinned in tools/sops/go.mod (see tools/build-cli.sh): the
# real sops CLI that the SOPS/age secret tests check interoperability with (files it encrypts
# decrypt at the agent; files flotilla secret encrypt writes decrypt with it).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/../build-cli.sh" sops github.com/getsops/sops/v3/cmd/sops -trimpath
