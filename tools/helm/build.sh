#!/usr/bin/env bash
# Builds bin/helm at the repository root from the Helm version pinned in tools/helm/go.mod: the
# reference `helm template` that the chart rendering tests compare with. It does nothing when
# bin/helm exists and was built from the same go.mod and go.sum (recorded in bin/.helm.sum).
#
# No -ldflags: the in-process renderer in flotilla is built without Helm's version stamps too,
# so both report the same .Capabilities.KubeVersion (Helm's compiled-in default) and
# .Capabilities.HelmVersion. The k8s.io modules are pinned to the main module's versions, so
# that both have the same default .Capabilities.APIVersions (client-go's scheme).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="$root/bin"
stamp="$bin/.helm.sum"

want=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)
if [[ -x "$bin/helm" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi

mkdir -p "$bin"
rm -f "$stamp"
cd "$here"
start=$SECONDS
echo "tools/helm: building bin/helm from helm.sh/helm/v3/cmd/helm (a cold build takes a few minutes)" >&2
go build -o "$bin/helm.tmp" helm.sh/helm/v3/cmd/helm
mv "$bin/helm.tmp" "$bin/helm"
echo "tools/helm: built bin/helm in $((SECONDS - start))s" >&2
echo "$want" > "$stamp"
