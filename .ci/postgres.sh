#!/usr/bin/env bash
# A throwaway PostgreSQL for the distributed-mode tests, on 127.0.0.1 and a free port.
#   .ci/postgres.sh start <dir>   initdb + pg_ctl start (as the postgres user: both refuse root); prints the URL
#   .ci/postgres.sh restart <dir> restarts it on the same port (the outage tests: a Postgres restart)
#   .ci/postgres.sh stop <dir>    stops it and removes <dir>
# fsync is off: the database lives for one test run.
set -euo pipefail
action=${1:?start|stop}
dir=${2:?data directory}

bin_dir() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$found" ] && command -v initdb >/dev/null; then found=$(dirname "$(command -v initdb)"); fi
  if [ -z "$found" ]; then
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2
    found=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  echo "$found"
}

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$action" in
  start)
    bin=$(bin_dir)
    port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    as_postgres "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/data/server.log" -w -t 60 \
      -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start >&2
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
  restart)
    bin=$(bin_dir)
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/data/server.log" -m fast -w -t 60 restart >&2
    ;;
  stop)
    bin=$(bin_dir)
    if [ -d "$dir/data" ]; then as_postgres "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true; fi
    rm -rf "$dir"
    ;;
  *) echo "unknown action $action" >&2; exit 2 ;;
esac
