#!/usr/bin/env bash
# Make PostgreSQL server binaries available for the warehouse tests (test_runtime_postgres.py).
#
#   bash scripts/ensure-postgres.sh
#
# The tests start their own throw-away server on loopback with initdb/pg_ctl; they only need the
# binaries. Nothing is done when /usr/lib/postgresql/*/bin/initdb exists. Otherwise, as root with
# apt-get (Debian, CI), it installs Debian's "postgresql" package. Anywhere else it prints how to
# get the binaries and exits 0: the PostgreSQL tests then skip with that reason.
set -euo pipefail

have_pg() { compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null 2>&1; }

if have_pg; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-postgres: installing Debian's postgresql package (server binaries for the tests)"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends postgresql >/dev/null; }; then
    echo "ensure-postgres: apt-get could not install postgresql; PostgreSQL tests will skip" >&2
    exit 0
  fi
  # The package may start a cluster service; the tests do not use it.
  have_pg && exit 0
  echo "ensure-postgres: postgresql installed but no initdb found" >&2
  exit 0
fi
echo "ensure-postgres: no PostgreSQL server binaries (install Debian's postgresql package); PostgreSQL tests will skip"
