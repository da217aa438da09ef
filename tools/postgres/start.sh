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

# PostgreSQL refuses to run as root: as root, run it as the package's "postgres" user. That
# user must reach the data directory; a checkout under a private home (/root, mode 700) is out
# of its reach, so the server's files then go under /var/tmp, and DIR/pgdir says where.
run=()
pgdir=$dir
if [ "$(id -u)" -eq 0 ]; then
	run=(runuser -u postgres --)
	chown postgres:postgres "$dir"
	if ! runuser -u postgres -- test -w "$dir"; then
		pgdir=/var/tmp/flotilla-postgres-$(printf '%s' "$dir" | sha256sum | cut -c1-12)
		mkdir -p "$pgdir"
		chown postgres:postgres "$pgdir"
		chmod 700 "$pgdir"
	fi
fi
echo "$pgdir" >"$dir/pgdir"

if "${run[@]}" "$bin/pg_ctl" -D "$pgdir/data" status >/dev/null 2>&1; then
	exit 0
fi
# A server of another checkout (or an earlier clone) may hold the port: reuse it if the tests'
# role can use it, as they need nothing more than CREATE DATABASE there.
if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
	if "$bin/psql" -q -At -h 127.0.0.1 -p "$port" -U flotilla -d postgres -c 'SELECT 1' >/dev/null 2>&1; then
		echo "PostgreSQL for tests: reusing the server already on 127.0.0.1:$port" >&2
		exit 0
	fi
	echo "port $port on 127.0.0.1 is taken by a PostgreSQL the role flotilla cannot use: stop it or pick another port (make PG_PORT=...)" >&2
	exit 1
fi
if [ ! -f "$pgdir/data/PG_VERSION" ]; then
	"${run[@]}" "$bin/initdb" -D "$pgdir/data" -U flotilla --auth=trust --no-locale -E UTF8 >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }
fi
# fsync off: a throwaway test server; nothing here must survive a power cut.
"${run[@]}" "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 start \
	-o "-c listen_addresses=127.0.0.1 -p $port -k $pgdir -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >/dev/null ||
	{ tail -n 30 "$pgdir/server.log" >&2; exit 1; }
echo "PostgreSQL for tests: postgres://flotilla@127.0.0.1:$port/postgres?sslmode=disable (data in $pgdir/data)" >&2
