#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for the store tests and print the line that points them at it.
#
#   pg_env="$(bash scripts/ci_postgres.sh)" && eval "$pg_env"     # sets KTRIAGE_TEST_PG_URL (+ _DATA)
#   bash scripts/ci_postgres.sh stop                              # stops it (reads KTRIAGE_TEST_PG_DATA)
#
# Why a private cluster instead of the distribution's service: CI containers have no systemd, the
# tests must not touch a real database, and a random free port on 127.0.0.1 lets several jobs share a
# host. PostgreSQL refuses to run as root, so as root the server runs as the `postgres` system user
# (or a dedicated `ktriage-pg` user when that does not exist). Only the `export` lines go to stdout;
# progress goes to stderr, so `eval` sees nothing else.
set -euo pipefail

log() { echo "ci_postgres: $*" >&2; }

find_bindir() {
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
    echo "$dir"
  fi
}

as_db_user() {
  # Run a command as the non-root user that owns the cluster (a no-op wrapper when we are not root).
  if [ "$(id -u)" -ne 0 ]; then
    "$@"
  elif command -v runuser >/dev/null 2>&1; then
    runuser -u "$DB_USER" -- "$@"
  else
    su -s /bin/sh "$DB_USER" -c "$(printf '%q ' "$@")"
  fi
}

if [ "${1:-}" = "stop" ]; then
  data="${2:-${KTRIAGE_TEST_PG_DATA:-}}"
  [ -n "$data" ] || { log "no data dir: pass it or set KTRIAGE_TEST_PG_DATA"; exit 2; }
  bindir="$(find_bindir)"
  DB_USER="$(stat -c %U "$data")"
  as_db_user "$bindir/pg_ctl" -D "$data/db" -m fast -w stop >&2 || true
  rm -rf "$data"
  exit 0
fi

bindir="$(find_bindir)"
if [ -z "$bindir" ]; then
  log "PostgreSQL not found under /usr/lib/postgresql: installing it with apt-get"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q postgresql >&2 || { $SUDO apt-get update -q >&2 && $SUDO apt-get install -y -q postgresql >&2; }
  bindir="$(find_bindir)"
  [ -n "$bindir" ] || { log "apt-get installed no initdb under /usr/lib/postgresql/*/bin"; exit 1; }
fi
log "using $bindir"

if [ "$(id -u)" -eq 0 ]; then
  if id postgres >/dev/null 2>&1; then
    DB_USER=postgres
  else
    DB_USER=ktriage-pg
    id "$DB_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$DB_USER"
  fi
else
  DB_USER="$(id -un)"
fi

data="$(mktemp -d "${TMPDIR:-/tmp}/ktriage-pg.XXXXXX")"
chmod 700 "$data"
[ "$(id -u)" -ne 0 ] || chown "$DB_USER" "$data"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
password="$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
pwfile="$data/.pw"
printf '%s\n' "$password" >"$pwfile"
[ "$(id -u)" -ne 0 ] || chown "$DB_USER" "$pwfile"

as_db_user "$bindir/initdb" -D "$data/db" -U ktriage --pwfile="$pwfile" --auth=scram-sha-256 -E UTF8 --no-sync >&2
rm -f "$pwfile"
# Sockets in the data dir: /var/run/postgresql may not exist or be writable for this user.
as_db_user "$bindir/pg_ctl" -D "$data/db" -l "$data/db/server.log" -w -t 60 \
  -o "-p $port -c listen_addresses=127.0.0.1 -k $data/db -c fsync=off" start >&2
PGPASSWORD="$password" "$bindir/createdb" -h 127.0.0.1 -p "$port" -U ktriage ktriage_test >&2
log "PostgreSQL running on 127.0.0.1:$port (data $data/db, log $data/db/server.log)"

echo "export KTRIAGE_TEST_PG_URL=postgresql+psycopg://ktriage:${password}@127.0.0.1:${port}/ktriage_test"
echo "export KTRIAGE_TEST_PG_DATA=$data"
