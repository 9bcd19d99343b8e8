#!/usr/bin/env bash
# Create or update the project's Python environment in .venv/ (repo root).
#
#   bash scripts/python-env.sh
#
# - Python 3.11 (python3.11, else python3 if that is 3.11; override with PYTHON=...).
# - uv, pinned by requirements.lock, is pip-installed into the venv.
# - `uv pip sync requirements.lock` makes the venv match the lock exactly.
# - ./orchestration (contract-runtime) is installed editable with --no-deps.
# - scripts/fix-airflow.py repairs a defect of the published apache-airflow-core 3.2.x that
#   stops every task from running (see that file).
# - .venv-dbt/ is the dbt producer's own environment (dbt-core, dbt-duckdb, dbt-postgres,
#   openlineage-dbt), synced from requirements-dbt.lock: dbt's pins conflict with Airflow's, so the
#   runtime runs dbt from there as a subprocess (ADR 0012).
# - .venv/.lock-sha256 records the hash of requirements.lock, requirements-dbt.lock,
#   orchestration/pyproject.toml and scripts/fix-airflow.py; when it matches, nothing is done.
#
# Idempotent, non-interactive, safe to run as root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV=".venv"
LOCK="requirements.lock"
DBT_VENV=".venv-dbt"
DBT_LOCK="requirements-dbt.lock"
PYPROJECT="orchestration/pyproject.toml"
FIX_AIRFLOW="scripts/fix-airflow.py"
STAMP="$VENV/.lock-sha256"
WANT_PY="3.11"

log() { printf 'python-env: %s\n' "$*"; }
die() { printf 'python-env: error: %s\n' "$*" >&2; exit 1; }

[ -f "$LOCK" ] || die "$LOCK not found"
[ -f "$DBT_LOCK" ] || die "$DBT_LOCK not found"
[ -f "$PYPROJECT" ] || die "$PYPROJECT not found"

# Never prompt, never try to download a Python interpreter.
export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export UV_PYTHON_DOWNLOADS=never UV_NO_PROGRESS=1
# uv trusts its bundled CA roots unless told otherwise; when no SSL_CERT_FILE is
# given, use the system store instead (works behind a TLS-intercepting proxy).
if [ -z "${SSL_CERT_FILE:-}" ] && [ -z "${UV_SYSTEM_CERTS:-}" ] && [ -z "${UV_NATIVE_TLS:-}" ]; then
  export UV_SYSTEM_CERTS=1
fi

want_sha="$(cat "$LOCK" "$DBT_LOCK" "$PYPROJECT" "$FIX_AIRFLOW" | sha256sum | cut -d' ' -f1)"

# Fast path: stamp matches and the venv's interpreter and package still work.
up_to_date() {
  [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want_sha" ] \
    && "$VENV/bin/python" -c 'import contract_runtime' >/dev/null 2>&1 \
    && [ -x "$DBT_VENV/bin/dbt" ] && [ -x "$DBT_VENV/bin/dbt-ol" ]
}
if up_to_date; then
  log "up to date (${want_sha:0:12}), nothing to do"
  exit 0
fi

# Serialise concurrent runs for this checkout (lock file lives outside the repo).
if command -v flock >/dev/null 2>&1; then
  lock_file="${TMPDIR:-/tmp}/contract-assets-python-env-$(printf '%s' "$ROOT" | sha256sum | cut -c1-16).lock"
  exec 9>"$lock_file"
  if ! flock -n 9; then
    log "another python-env.sh run is in progress; waiting"
    flock 9
  fi
  if up_to_date; then
    log "up to date (${want_sha:0:12}), built by a concurrent run"
    exit 0
  fi
fi

start=$SECONDS

# 1. Interpreter.
py_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true; }

if [ -x "$VENV/bin/python" ] && [ "$(py_version "$VENV/bin/python")" = "$WANT_PY" ]; then
  log "reusing $VENV ($("$VENV/bin/python" -V 2>&1))"
else
  if [ -n "${PYTHON:-}" ]; then
    candidates=("$PYTHON")
  else
    candidates=(python3.11 python3)
  fi
  base_py=""
  for c in "${candidates[@]}"; do
    if command -v "$c" >/dev/null 2>&1 && [ "$(py_version "$c")" = "$WANT_PY" ]; then
      base_py="$c"; break
    fi
  done
  [ -n "$base_py" ] || die "no Python $WANT_PY found (tried: ${candidates[*]}); set PYTHON=/path/to/python3.11"
  if [ -e "$VENV" ]; then
    log "removing unusable $VENV"
    rm -rf "$VENV"
  fi
  log "creating $VENV with $base_py ($("$base_py" -V 2>&1))"
  "$base_py" -m venv "$VENV"
fi
rm -f "$STAMP"

# 2. uv, at the version pinned in the lock.
uv_version="$(sed -n 's/^uv==\([^ ;]*\).*/\1/p' "$LOCK" | head -n1)"
[ -n "$uv_version" ] || die "$LOCK does not pin uv (add uv==X.Y.Z to requirements.in and re-lock)"
if [ "$("$VENV/bin/uv" --version 2>/dev/null | cut -d' ' -f2)" != "$uv_version" ]; then
  log "installing uv $uv_version"
  if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    "$VENV/bin/python" -m ensurepip --default-pip >/dev/null
  fi
  "$VENV/bin/python" -m pip install --quiet "uv==$uv_version"
fi
UV="$VENV/bin/uv"

# 3. Exactly the locked packages.
log "syncing $VENV with $LOCK ($(grep -c '^[A-Za-z0-9].*==' "$LOCK") packages)"
"$UV" pip sync --quiet --python "$VENV/bin/python" "$LOCK"

# 4. The project's runtime package, editable, no dependencies, no network.
log "installing ./orchestration (contract-runtime) editable"
"$UV" pip install --quiet --python "$VENV/bin/python" \
  --no-deps --no-build-isolation --editable ./orchestration

"$VENV/bin/python" -c 'import contract_runtime' \
  || die "contract_runtime does not import after install"

# 5. Repair the published Airflow 3.2.x execution API (idempotent; verifies the result).
"$VENV/bin/python" "$FIX_AIRFLOW" || die "$FIX_AIRFLOW could not repair the installed Airflow"

# 6. The dbt environment: its own interpreter (the same base Python), exactly its lock.
base_of_venv="$("$VENV/bin/python" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')"
if [ ! -x "$DBT_VENV/bin/python" ] || [ "$(py_version "$DBT_VENV/bin/python")" != "$WANT_PY" ]; then
  rm -rf "$DBT_VENV"
  log "creating $DBT_VENV with $base_of_venv"
  "$base_of_venv" -m venv --without-pip "$DBT_VENV"
fi
log "syncing $DBT_VENV with $DBT_LOCK ($(grep -c '^[A-Za-z0-9].*==' "$DBT_LOCK") packages)"
"$UV" pip sync --quiet --python "$DBT_VENV/bin/python" "$DBT_LOCK"
"$DBT_VENV/bin/python" -c 'import dbt.cli.main, dbt.adapters.duckdb, dbt.adapters.postgres, openlineage.dbt' \
  || die "dbt or an adapter does not import in $DBT_VENV"

printf '%s\n' "$want_sha" > "$STAMP.tmp"
mv "$STAMP.tmp" "$STAMP"
log "done in $((SECONDS - start)) s ($("$VENV/bin/python" -c 'import importlib.metadata as m; print("apache-airflow", m.version("apache-airflow"))'))"
