#!/usr/bin/env bash
# Regenerates the Go code beside the .proto files. Needs protoc (Debian: protobuf-compiler);
# the Go plugins are built at the versions go.mod pins. The generated code is committed, so
# building Flotilla never needs this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
root=$(cd .. && pwd)
command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
GOBIN="$root/bin" go install google.golang.org/protobuf/cmd/protoc-gen-go
GOBIN="$root/bin" go install connectrpc.com/connect/cmd/protoc-gen-connect-go
PATH="$root/bin:$PATH" protoc -I . \
  --go_out=. --go_opt=paths=source_relative \
  --connect-go_out=. --connect-go_opt=paths=source_relative \
  $(find . -name '*.proto' | sort)
