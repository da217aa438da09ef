#!/usr/bin/env bash
# Builds bin/golangci-lint from the version pinned in tools/golangci-lint/go.mod (see
# tools/build-cli.sh), stamped with that version so that `golangci-lint version` names it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(cd "$here" && go list -m -f '{{.Version}}' github.com/golangci/golangci-lint/v2)
exec "$here/../build-cli.sh" golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint \
  -trimpath -ldflags "-X main.version=${version#v}"
