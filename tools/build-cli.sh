#!/usr/bin/env bash
# Usage: tools/build-cli.sh NAME PACKAGE [go build flags...]
#
# Builds bin/NAME at the repository root from PACKAGE at the version pinned in
# tools/NAME/go.mod: the reference CLIs (helm, cosign, sops) the tests compare with or
# interoperate with. It does nothing when the binary exists and was built from the same go.mod
# and go.sum (recorded in bin/.NAME.sum), so tests and `make` can call it every time. A cold
# build takes minutes on 2 cores; later ones use the Go build cache.
set -euo pipefail

name=$1 pkg=$2
shift 2
tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
here="$tools/$name"
bin="$(cd "$tools/.." && pwd)/bin"
stamp="$bin/.$name.sum"

want=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)
if [[ -x "$bin/$name" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi

mkdir -p "$bin"
rm -f "$stamp"
cd "$here"
start=$SECONDS
version=$(go list -m -f '{{.Version}}' "$(go list -f '{{.Module.Path}}' "$pkg")")
echo "$name: building bin/$name $version from $pkg (cold builds take minutes)" >&2
go build "$@" -o "$bin/$name.tmp" "$pkg"
mv "$bin/$name.tmp" "$bin/$name"
echo "$name: built bin/$name $version in $((SECONDS - start))s" >&2
echo "$want" > "$stamp"
