#!/usr/bin/env bash
# Usage: proto/generate.sh [OUT]
#
# Regenerates the Go code beside the .proto files (or under OUT, for `make proto-check`, which
# compares it with the committed code). Needs protoc (Debian: protobuf-compiler);
# the Go plugins are built at the versions go.mod pins. The generated code is committed, so
# building Flotilla never needs this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
root=$(cd .. && pwd)
out=${1:-.}
mkdir -p "$out"
command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
GOBIN="$root/bin" go install google.golang.org/protobuf/cmd/protoc-gen-go
GOBIN="$root/bin" go install connectrpc.com/connect/cmd/protoc-gen-connect-go
PATH="$root/bin:$PATH" protoc -I . \
  --go_out="$out" --go_opt=paths=source_relative \
  --connect-go_out="$out" --connect-go_opt=paths=source_relative \
  $(find . -name '*.proto' | sort)
