#!/usr/bin/env bash
# A throwaway PostgreSQL for gpufleet's tests and examples: a temporary data
# directory, a loopback port, trust authentication, no durability.
#
#   eval "$(scripts/pg-local.sh start)"   # exports GPUFLEET_PG_DSN and GPUFLEET_PG_DIR
#   go test -race ./fleet/pgstore/
#   scripts/pg-local.sh stop "$GPUFLEET_PG_DIR"
#
# start prints the export lines on stdout (everything else goes to stderr).
# As root it installs Debian's postgresql package when no server is found
# and runs the server as the postgres user (PostgreSQL refuses root).
# PGLOCAL_PORT picks the first port tried (default 55432).
set -euo pipefail

log() { echo "pg-local: $*" >&2; }

bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"; return
  fi
  return 1
}

install_server() {
  if [ "$(id -u)" != 0 ]; then
    log "no PostgreSQL server found; install it (Debian: sudo apt-get install -y postgresql)"
    exit 1
  fi
  log "installing Debian's postgresql package"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2
  apt-get install -y --no-install-recommends postgresql >&2
}

# as_server runs a command as the user that owns the cluster.
as_server() {
  if [ "$(id -u)" = 0 ]; then
    (cd / && runuser -u "$PG_USER" -- "$@")
  else
    "$@"
  fi
}

free_port() {
  local p=${PGLOCAL_PORT:-55432}
  for _ in $(seq 1 50); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
    p=$((p + 1))
  done
  log "no free port from ${PGLOCAL_PORT:-55432}"; exit 1
}

start() {
  local bin dir port
  bin=$(bindir) || { install_server; bin=$(bindir); }
  PG_USER=$(id -un)
  if [ "$(id -u)" = 0 ]; then
    PG_USER=postgres
    id "$PG_USER" >/dev/null 2>&1 || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin "$PG_USER"
  fi
  dir=$(mktemp -d "${TMPDIR:-/tmp}/gpufleet-pg.XXXXXX")
  chmod 700 "$dir"
  [ "$(id -u)" = 0 ] && chown "$PG_USER" "$dir"
  port=$(free_port)
  as_server "$bin/initdb" -D "$dir/data" -U gpufleet -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    start >&2 || { cat "$dir/server.log" >&2; exit 1; }
  log "PostgreSQL on 127.0.0.1:$port, data in $dir"
  echo "export GPUFLEET_PG_DSN='postgres://gpufleet@127.0.0.1:$port/postgres?sslmode=disable'"
  echo "export GPUFLEET_PG_DIR='$dir'"
}

stop() {
  local dir=${1:-${GPUFLEET_PG_DIR:-}} bin
  case "$dir" in
    */gpufleet-pg.*) ;;
    *) log "usage: $0 stop DIR (the GPUFLEET_PG_DIR that start printed)"; exit 2 ;;
  esac
  [ -d "$dir" ] || return 0
  bin=$(bindir)
  PG_USER=$(stat -c %U "$dir")
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  *) echo "usage: $0 start | stop DIR" >&2; exit 2 ;;
esac
