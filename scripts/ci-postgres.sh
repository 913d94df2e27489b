#!/usr/bin/env bash
# Install (Debian package) and start a throwaway PostgreSQL on 127.0.0.1 for the store tests.
# Prints the SQLAlchemy URL on stdout; everything else goes to stderr.
set -euo pipefail
# A free port unless one is given (a PostgreSQL of the session may already hold 5432 or 54329).
PORT="${BQAS_PG_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >&2
fi
BIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
DATA="$(mktemp -d /tmp/bqas-pg.XXXXXX)"
chown postgres:postgres "$DATA"
su postgres -s /bin/sh -c "$BIN/initdb -D $DATA -U postgres --auth=trust -E UTF8" >&2
su postgres -s /bin/sh -c "$BIN/pg_ctl -D $DATA -o '-p $PORT -k /tmp -c listen_addresses=127.0.0.1' -l $DATA/log -w start" >&2
su postgres -s /bin/sh -c "$BIN/createdb -h 127.0.0.1 -p $PORT -U postgres bqas_test" >&2
echo "postgresql+psycopg://postgres@127.0.0.1:$PORT/bqas_test"
