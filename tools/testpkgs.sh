#!/usr/bin/env bash
# Usage: tools/testpkgs.sh unit|integration|e2e
#
# Prints the packages of one test tier (README, "Tests"), one per line, for `make test-TIER`:
#   e2e          test/e2e: whole fleets on the shared cluster pool;
#   integration  packages whose tests reach real API servers (internal/localcluster), PostgreSQL
#                (internal/pgtest) or a browser (chromedp), one environment per package;
#   unit         the rest: no API server, no database server, no browser.
# The tier follows from what a package's tests import, so a new package lands in the right one.
# test/image is none of them: make test-image runs it with the static build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tier=${1:?usage: tools/testpkgs.sh unit|integration|e2e}
case $tier in unit|integration|e2e) ;; *) echo "unknown tier $tier: want unit, integration or e2e" >&2; exit 2 ;; esac
go list -test -f '{{if .ForTest}}{{.ForTest}}{{range .Deps}} {{.}}{{end}}{{end}}' ./... |
  awk -v want="$tier" '
    {
      p = $1
      if (!(p in t)) t[p] = "unit"
      for (i = 2; i <= NF; i++)
        if ($i == "github.com/flotilla/flotilla/internal/localcluster" ||
            $i == "github.com/flotilla/flotilla/internal/pgtest" ||
            $i == "github.com/chromedp/chromedp") t[p] = "integration"
    }
    END {
      for (p in t) {
        if (p ~ /^github.com\/flotilla\/flotilla\/test\/image$/) continue
        if (p ~ /^github.com\/flotilla\/flotilla\/test\//) t[p] = "e2e"
        if (t[p] == want) print p
      }
    }' | sort
