#!/usr/bin/env bash
# Stops the throwaway PostgreSQL server tools/postgres/start.sh started for DIR.
# usage: tools/postgres/stop.sh DIR
set -euo pipefail
dir=${1:?usage: stop.sh DIR}
[ -f "$dir/pgdir" ] || exit 0
pgdir=$(cat "$dir/pgdir")
[ -f "$pgdir/data/PG_VERSION" ] || exit 0
bin=$(dirname "$(ls -1 /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -n1)")
run=()
[ "$(id -u)" -eq 0 ] && run=(runuser -u postgres --)
"${run[@]}" "$bin/pg_ctl" -D "$pgdir/data" -m fast -w stop >/dev/null || true
