#!/usr/bin/env bash
# Builds bin/cosign at the repository root from the version pinned in tools/cosign/go.mod: the
# real cosign CLI the tests of OCI sources sign artifacts with (key-based, no transparency log).
# It does nothing when the binary exists and was built from the same go.mod and go.sum
# (recorded in bin/.cosign.sum), so tests and `make` can call it every time. A cold build
# takes a few minutes on 2 cores; later ones use the Go build cache.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="$root/bin"
stamp="$bin/.cosign.sum"

want=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)
if [[ -x "$bin/cosign" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi

mkdir -p "$bin"
rm -f "$stamp"
cd "$here"
start=$SECONDS
echo "cosign: building bin/cosign from github.com/sigstore/cosign/v2 (cold builds take minutes)" >&2
version=$(go list -m -f '{{.Version}}' github.com/sigstore/cosign/v2)
# Stamp the version `cosign version` reports (a plain go build leaves it empty).
go build -trimpath -ldflags "-X sigs.k8s.io/release-utils/version.gitVersion=$version" -o "$bin/cosign.tmp" github.com/sigstore/cosign/v2/cmd/cosign
mv "$bin/cosign.tmp" "$bin/cosign"
echo "cosign: built bin/cosign $version in $((SECONDS - start))s" >&2
echo "$want" > "$stamp"
