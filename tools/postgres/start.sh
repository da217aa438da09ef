#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the tests: Debian's package (installed with apt-get
# when missing and we are root), a data directory of its own under DIR, listening on 127.0.0.1
# and a socket in DIR only, trust authentication for the role "flotilla". Idempotent: a server
# already running there is left alone. It never touches the packaged cluster.
#
# usage: tools/postgres/start.sh DIR [PORT]      (PORT default 55432)
# The tests then connect to postgres://flotilla@127.0.0.1:PORT/postgres?sslmode=disable.
# Stop it with: tools/postgres/stop.sh DIR
set -euo pipefail

dir=${1:?usage: start.sh DIR [PORT]}
port=${2:-55432}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

bindir() {
	local initdb
	initdb=$(ls -1 /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n1 || true)
	[ -n "$initdb" ] && dirname "$initdb"
}

bin=$(bindir || true)
if [ -z "$bin" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "PostgreSQL is not installed: run 'sudo apt-get install -y postgresql' (or make postgres as root)" >&2
		exit 1
	fi
	echo "installing PostgreSQL from Debian's packages" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
	bin=$(bindir)
fi

# PostgreSQL refuses to run as root: as root, run it as the package's "postgres" user.
run=()
if [ "$(id -u)" -eq 0 ]; then
	chown postgres:postgres "$dir"
	run=(runuser -u postgres --)
fi

if "${run[@]}" "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
	exit 0
fi
if [ ! -f "$dir/data/PG_VERSION" ]; then
	"${run[@]}" "$bin/initdb" -D "$dir/data" -U flotilla --auth=trust --no-locale -E UTF8 >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }
fi
# fsync off: a throwaway test server; nothing here must survive a power cut.
"${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
	-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >/dev/null ||
	{ tail -n 30 "$dir/server.log" >&2; exit 1; }
echo "PostgreSQL for tests: postgres://flotilla@127.0.0.1:$port/postgres?sslmode=disable (data in $dir/data)" >&2
