#!/usr/bin/env bash
# Builds bin/cosign from the version pinned in tools/cosign/go.mod (see tools/build-cli.sh): the
# real cosign CLI the tests of OCI sources sign artifacts with (key-based, no transparency log).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(cd "$here" && go list -m -f '{{.Version}}' github.com/sigstore/cosign/v2)
# Stamp the version `cosign version` reports (a plain go build leaves it empty).
exec "$here/../build-cli.sh" cosign github.com/sigstore/cosign/v2/cmd/cosign \
  -trimpath -ldflags "-X sigs.k8s.io/release-utils/version.gitVersion=$version"
