#!/usr/bin/env bash
# Create or update datacontract-cli's own Python environment in .venv-datacontract/ (repo root).
#
#   bash scripts/datacontract-env.sh
#
# datacontract-cli (the ODCS peer tool the ODCS tests run: lint, changelog) pins versions that
# conflict with Airflow's lock, so it lives apart from .venv/ (docs/adr/0014-odcs-bridge.md).
# - Python 3.11, as scripts/python-env.sh; uv comes from the project's .venv (built first).
# - `uv pip sync requirements-datacontract.lock` makes the venv match the lock exactly.
# - .venv-datacontract/.lock-sha256 records the lock's hash; when it matches, nothing is done.
#
# Idempotent, non-interactive, safe to run as root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV=".venv-datacontract"
LOCK="requirements-datacontract.lock"
STAMP="$VENV/.lock-sha256"
WANT_PY="3.11"

log() { printf 'datacontract-env: %s\n' "$*"; }
die() { printf 'datacontract-env: error: %s\n' "$*" >&2; exit 1; }

[ -f "$LOCK" ] || die "$LOCK not found"
export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export UV_PYTHON_DOWNLOADS=never UV_NO_PROGRESS=1
if [ -z "${SSL_CERT_FILE:-}" ] && [ -z "${UV_SYSTEM_CERTS:-}" ] && [ -z "${UV_NATIVE_TLS:-}" ]; then
  export UV_SYSTEM_CERTS=1
fi

want_sha="$(sha256sum "$LOCK" | cut -d' ' -f1)"
up_to_date() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want_sha" ] && "$VENV/bin/datacontract" --version >/dev/null 2>&1
}
if up_to_date; then
  log "up to date (${want_sha:0:12}), nothing to do"
  exit 0
fi

# Serialise concurrent runs for this checkout (lock file lives outside the repo).
if command -v flock >/dev/null 2>&1; then
  lock_file="${TMPDIR:-/tmp}/contract-assets-datacontract-env-$(printf '%s' "$ROOT" | sha256sum | cut -c1-16).lock"
  exec 9>"$lock_file"
  flock 9
  if up_to_date; then
    log "up to date (${want_sha:0:12}), built by a concurrent run"
    exit 0
  fi
fi

start=$SECONDS
# uv, pinned by requirements.lock, lives in the project's venv.
bash scripts/python-env.sh >/dev/null
UV=".venv/bin/uv"

py_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true; }
if [ ! -x "$VENV/bin/python" ] || [ "$(py_version "$VENV/bin/python")" != "$WANT_PY" ]; then
  rm -rf "$VENV"
  base_py=""
  for c in ${PYTHON:-python3.11 python3}; do
    if command -v "$c" >/dev/null 2>&1 && [ "$(py_version "$c")" = "$WANT_PY" ]; then base_py="$c"; break; fi
  done
  [ -n "$base_py" ] || die "no Python $WANT_PY found; set PYTHON=/path/to/python3.11"
  log "creating $VENV with $base_py"
  "$base_py" -m venv --without-pip "$VENV"
fi
rm -f "$STAMP"
log "syncing $VENV with $LOCK ($(grep -c '^[A-Za-z0-9].*==' "$LOCK") packages)"
"$UV" pip sync --quiet --python "$VENV/bin/python" "$LOCK"
"$VENV/bin/datacontract" --version >/dev/null || die "datacontract does not run after install"
printf '%s\n' "$want_sha" > "$STAMP.tmp"
mv "$STAMP.tmp" "$STAMP"
log "done in $((SECONDS - start)) s (datacontract-cli $("$VENV/bin/datacontract" --version))"
