#!/usr/bin/env bash
# Regenerates the protocol code into a temporary directory and fails if it differs from the
# committed code: a .proto edited without running proto/generate.sh, or generated with other
# plugin versions than go.mod pins.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
./generate.sh "$tmp"
status=0
while IFS= read -r f; do
  if ! cmp -s "$f" "$tmp/$f"; then
    echo "proto: $f is not what proto/generate.sh makes of the .proto files; run it and commit the result" >&2
    diff -u "$f" "$tmp/$f" | head -20 >&2 || true
    status=1
  fi
done < <(cd "$tmp" && find . -name '*.go' | sort)
while IFS= read -r f; do
  [[ -f "$tmp/$f" ]] || { echo "proto: $f is committed but no .proto generates it" >&2; status=1; }
done < <(find . \( -name '*.pb.go' -o -name '*.connect.go' \) | sort)
exit $status
