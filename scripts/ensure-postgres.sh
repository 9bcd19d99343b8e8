#!/usr/bin/env bash
# Make the live servers' system binaries available for the tests:
#   * PostgreSQL server binaries (test_runtime_postgres.py, the live Airflow stack's metadata
#     database and warehouse; scripts/livestack.py);
#   * libfaketime (Debian package faketime): the live stack runs on a fixed clock (see the
#     LiveStack "clock" parameter in scripts/livestack.py);
#   * redis-server (Debian package redis-server): the Celery broker of the CeleryExecutor stack
#     (LiveStack executor="celery").
#
#   bash scripts/ensure-postgres.sh
#
# The tests start their own throw-away servers on loopback; they only need the binaries. Nothing
# is done when both are present. Otherwise, as root with apt-get (Debian, CI), it installs the
# missing Debian packages. Anywhere else it prints what is missing and exits 0: the tests that
# need it then skip with that reason.
set -euo pipefail

have_pg() { compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null 2>&1; }
have_faketime() { compgen -G "/usr/lib/*/faketime/libfaketimeMT.so.1" >/dev/null; }
have_redis() { command -v redis-server >/dev/null 2>&1; }

missing=()
have_pg || missing+=(postgresql)
have_faketime || missing+=(faketime)
have_redis || missing+=(redis-server)
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-postgres: installing Debian's ${missing[*]} (server binaries and clock for the tests)"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
    echo "ensure-postgres: apt-get could not install ${missing[*]}; the tests that need them will skip" >&2
    exit 0
  fi
  # The postgresql package may start a cluster service; the tests do not use it.
  have_pg || echo "ensure-postgres: postgresql installed but no initdb found" >&2
  have_faketime || echo "ensure-postgres: faketime installed but no libfaketimeMT found" >&2
  have_redis || echo "ensure-postgres: redis-server installed but not on PATH" >&2
  # The redis-server package may start a service on 6379; the tests start their own on a free port.
  exit 0
fi
echo "ensure-postgres: missing ${missing[*]} (Debian packages); the tests that need them will skip"
