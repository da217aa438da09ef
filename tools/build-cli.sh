#!/usr/bin/env bash
# Usage: tools/build-cli.sh NAME PACKAGE [go build flags...]
#
# Links bin/NAME at the repository root to PACKAGE built at the version pinned in
# tools/NAME/go.mod: the reference CLIs (helm, cosign, sops) the tests compare with or
# interoperate with. It is built once per machine and pin (tools/cache.sh says where), so tests
# and `make` can call this every time. A cold build takes minutes on 2 cores.
set -euo pipefail

name=$1 pkg=$2
shift 2
flags=("$@")
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
here="$tools_dir/$name"

build() {
  local out=$1 start=$SECONDS version
  cd "$here"
  version=$(go list -m -f '{{.Version}}' "$(go list -f '{{.Module.Path}}' "$pkg")")
  echo "$name: building $name $version from $pkg into $out (cold builds take minutes)" >&2
  go build "${flags[@]}" -o "$out/$name" "$pkg"
  echo "$name: built $name $version in $((SECONDS - start))s" >&2
}

# The key covers the flags too: they are part of the caller's script, which is hashed.
tool_cached "$name" "$(tool_key "$here/go.mod" "$here/go.sum" "$here/build.sh" "$tools_dir/build-cli.sh")" build "$name"
