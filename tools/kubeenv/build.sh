#!/usr/bin/env bash
# Builds bin/kube-apiserver, bin/etcd and bin/kubectl at the repository root from the versions pinned in
# tools/kubeenv/go.mod. It does nothing when both binaries exist and were built from the same
# go.mod and go.sum (recorded in bin/.kubeenv.sum), so `make test` can call it every time.
# A cold build takes several minutes on 2 cores (kube-apiserver dominates); the Go build cache
# makes a rebuild after a version bump of an unrelated module quick.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="$root/bin"
stamp="$bin/.kubeenv.sum"

want=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)
if [[ -x "$bin/kube-apiserver" && -x "$bin/etcd" && -x "$bin/kubectl" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi

mkdir -p "$bin"
rm -f "$stamp"
cd "$here"
build() {
  local name=$1 pkg=$2 start=$SECONDS
  shift 2
  echo "kubeenv: building $name from $pkg (cold builds take minutes; later ones use the Go build cache)" >&2
  go build "$@" -o "$bin/$name.tmp" "$pkg"
  mv "$bin/$name.tmp" "$bin/$name"
  echo "kubeenv: built bin/$name in $((SECONDS - start))s" >&2
}
build etcd go.etcd.io/etcd/server/v3
# Stamp the version that /version reports (a plain `go build` leaves v0.0.0-master), so that
# clients checking the server version see the release that is pinned.
kube=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$kube" | cut -d. -f2)
vpkg=k8s.io/component-base/version
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
  -ldflags "-X $vpkg.gitVersion=$kube -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean"
# kubectl: for users of the demo, and for tests and benchmarks that compare with it.
build kubectl k8s.io/kubernetes/cmd/kubectl \
  -ldflags "-X $vpkg.gitVersion=$kube -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean"
echo "$want" > "$stamp"
