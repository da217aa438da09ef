#!/usr/bin/env bash
# Links bin/kube-apiserver, bin/etcd and bin/kubectl at the repository root to the versions
# pinned in tools/kubeenv/go.mod, built once per machine and pin (tools/cache.sh says where), so
# `make test` can call it every time. A cold build takes several minutes on 2 cores
# (kube-apiserver dominates).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/../cache.sh"
here="$tools_dir/kubeenv"

build() {
  local out=$1
  cd "$here"
  one() {
    local name=$1 pkg=$2 start=$SECONDS
    shift 2
    echo "kubeenv: building $name from $pkg (cold builds take minutes; later ones use the Go build cache)" >&2
    go build "$@" -o "$out/$name" "$pkg"
    echo "kubeenv: built $name in $((SECONDS - start))s" >&2
  }
  one etcd go.etcd.io/etcd/server/v3
  # Stamp the version that /version reports (a plain `go build` leaves v0.0.0-master), so that
  # clients checking the server version see the release that is pinned.
  local kube minor vpkg=k8s.io/component-base/version
  kube=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
  minor=$(echo "$kube" | cut -d. -f2)
  local ld="-X $vpkg.gitVersion=$kube -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean"
  one kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver -ldflags "$ld"
  # kubectl: for users of the demo, and for tests and benchmarks that compare with it.
  one kubectl k8s.io/kubernetes/cmd/kubectl -ldflags "$ld"
}

tool_cached kubeenv "$(tool_key "$here/go.mod" "$here/go.sum" "$here/build.sh")" build etcd kube-apiserver kubectl
