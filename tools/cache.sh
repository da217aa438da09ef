# Sourced by the tool build scripts: builds a pinned tool once per machine, not once per clone.
#
# A tool's binaries live in $FLOTILLA_TOOLS_CACHE/NAME-KEY/ (default
# ${XDG_CACHE_HOME:-~/.cache}/flotilla/tools), where KEY hashes what decides the build: the
# tool's pin files (go.mod, go.sum), its build script and the Go version. bin/NAME at the
# repository root is a symlink into that directory. A fresh clone on a machine that built the
# same pins before links the binaries and builds nothing; a pin bump makes a new directory
# beside the old one. Two clones building the same tool at once take turns on a lock file.

tools_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# BIN overrides where the links go (the repository's bin/ by default).
bin_dir=${BIN:-$(cd "$tools_dir/.." && pwd)/bin}
cache_root=${FLOTILLA_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla/tools}

# tool_key FILE...: the cache key of a build made from these files with this machine's Go.
tool_key() {
  { cat "$@"; go env GOVERSION GOOS GOARCH; } | sha256sum | cut -c1-16
}

# tool_cached NAME KEY BUILD_FN BINARY...: links bin/BINARY for each BINARY from the cache
# entry NAME-KEY, running BUILD_FN DIR first (which must write every BINARY into DIR) when the
# entry is missing. An interrupted build leaves only a temporary directory, never an entry.
tool_cached() {
  local name=$1 key=$2 build_fn=$3
  shift 3
  local entry="$cache_root/$name-$key"
  if ! tool_complete "$entry" "$@"; then
    mkdir -p "$cache_root"
    (
      flock 9
      if tool_complete "$entry" "$@"; then exit 0; fi
      local tmp
      tmp=$(mktemp -d "$cache_root/.$name-$key.XXXXXX")
      trap 'rm -rf "$tmp"' EXIT
      "$build_fn" "$tmp"
      tool_complete "$tmp" "$@" || { echo "$name: the build did not write all of: $*" >&2; exit 1; }
      rm -rf "$entry"
      mv "$tmp" "$entry"
      trap - EXIT
    ) 9>"$cache_root/.$name.lock"
  fi
  mkdir -p "$bin_dir"
  local b
  for b in "$@"; do
    ln -sfn "$entry/$b" "$bin_dir/$b"
  done
  # Stamps of the scripts before the cache (bin/.NAME.sum) mean nothing now.
  rm -f "$bin_dir/.$name.sum"
}

tool_complete() {
  local dir=$1 b
  shift
  for b in "$@"; do
    [[ -x "$dir/$b" ]] || return 1
  done
}
