#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries are installed for the JDBC catalog tests (tests/catalogs):
# Debian's "postgresql" package, installed with apt-get when missing (CI machines start fresh; this
# needs root). Nothing is started here: each test session runs a private cluster (initdb + postgres
# on a free loopback port in a temporary directory, see tests/support/catalogs.py).
# TABLEKEEPER_NO_APT=1 reports a missing server instead of installing it.
# Prints "postgres <directory of initdb and postgres>".
set -euo pipefail

bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return 0
    fi
  done
  local initdb
  initdb=$(command -v initdb 2>/dev/null) || return 1
  initdb=$(readlink -f "$initdb")
  [ -x "$(dirname "$initdb")/postgres" ] && dirname "$initdb"
}

if ! dir=$(bindir); then
  if [ "${TABLEKEEPER_NO_APT:-}" = 1 ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "postgres: PostgreSQL's server is not installed (apt-get install postgresql)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends postgresql >&2 \
    || { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends postgresql >&2; } \
    || { echo "postgres: apt-get could not install postgresql" >&2; exit 1; }
  dir=$(bindir) || { echo "postgres: postgresql installed, but no initdb/postgres found" >&2; exit 1; }
fi
# As root the cluster runs as Debian's "postgres" user: the server refuses to run as root.
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  echo "postgres: running as root, but there is no 'postgres' user to run the server as" >&2
  exit 1
fi
echo "postgres $dir"
