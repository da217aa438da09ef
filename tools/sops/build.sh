#!/usr/bin/env bash
# Builds bin/sops at the repository root from the version pinned in tools/sops/go.mod: the
# real sops CLI that the SOPS/age secret tests check interoperability with (files it encrypts
# decrypt at the agent; files flotilla secret encrypt writes decrypt with it).
# It does nothing when the binary exists and was built from the same go.mod and go.sum
# (recorded in bin/.sops.sum), so tests and `make` can call it every time. A cold build
# takes a few minutes on 2 cores; later ones use the Go build cache.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="$root/bin"
stamp="$bin/.sops.sum"

want=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)
if [[ -x "$bin/sops" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi

mkdir -p "$bin"
rm -f "$stamp"
cd "$here"
start=$SECONDS
echo "sops: building bin/sops from github.com/getsops/sops/v3 (cold builds take minutes)" >&2
version=$(go list -m -f '{{.Version}}' github.com/getsops/sops/v3)
go build -trimpath -o "$bin/sops.tmp" github.com/getsops/sops/v3/cmd/sops
mv "$bin/sops.tmp" "$bin/sops"
echo "sops: built bin/sops $version in $((SECONDS - start))s" >&2
echo "$want" > "$stamp"
