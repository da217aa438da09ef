#!/usr/bin/env bash
# Builds bin/helm from the Helm version pinned in tools/helm/go.mod (see tools/build-cli.sh): the
# reference `helm template` that the chart rendering tests compare with.
#
# No -ldflags: the in-process renderer in flotilla is built without Helm's version stamps too,
# so both report the same .Capabilities.KubeVersion (Helm's compiled-in default) and
# .Capabilities.HelmVersion. The k8s.io modules are pinned to the main module's versions, so
# that both have the same default .Capabilities.APIVersions (client-go's scheme).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/../build-cli.sh" helm helm.sh/helm/v3/cmd/helm
