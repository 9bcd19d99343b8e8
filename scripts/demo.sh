#!/usr/bin/env bash
# The bundled example, end to end, on this machine:  npm run demo
#
# 1. compiles contracts/ into generated/ (contract-assets compile);
# 2. builds or reuses the Python environment (.venv, scripts/python-env.sh);
# 3. makes a fresh Airflow home in a temporary folder (SQLite metadata DB, `airflow db migrate`);
# 4. runs every bundled DAG in dependency order on the embedded DuckDB warehouse and the bundled
#    sample data (scripts/localrun.py: DAG.test(), what `airflow dags test` runs);
# 5. prints what was published (table, rows, quality status), what was blocked or quarantined,
#    and where the OpenLineage events are.
#
# Lineage transport: when the environment configures one (OPENLINEAGE__TRANSPORT__*,
# OPENLINEAGE_CONFIG or OPENLINEAGE_URL), events go there; otherwise to a file in the demo folder.
# The demo folder is kept for inspection (its path is printed); set CONTRACT_ASSETS_DEMO_DIR to
# choose it (it must be empty or absent).
#
# The dbt family's shim (dbt-warehouse-shim) comes from test/python/shims, a stand-in that loads
# the fiscal calendar seed; the python producer's package is put on PYTHONPATH
# (orchestration/jobs).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { printf '\n== %s\n' "$*"; }

say "compile contracts/ -> generated/"
if [ ! -f dist/compiler/cli.js ]; then
  npx --no-install tsc -p tsconfig.json
fi
node bin/contract-assets.js compile

say "Python environment (.venv)"
bash scripts/python-env.sh

DEMO_DIR="${CONTRACT_ASSETS_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/contract-assets-demo.XXXXXX")}"
mkdir -p "$DEMO_DIR"
if [ -n "$(ls -A "$DEMO_DIR")" ]; then
  echo "demo: $DEMO_DIR is not empty" >&2
  exit 2
fi
DEMO_DIR="$(cd "$DEMO_DIR" && pwd)"

unset AIRFLOW_CONFIG AIRFLOW__CORE__UNIT_TEST_MODE
export AIRFLOW_HOME="$DEMO_DIR/airflow"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_FOLDER="$ROOT/generated/dags"
export CONTRACT_ASSETS_WAREHOUSE="$DEMO_DIR/warehouse.duckdb"
export PYTHONPATH="$ROOT/orchestration/jobs${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$ROOT/.venv/bin:$ROOT/test/python/shims:$PATH"

if [ -z "${OPENLINEAGE_CONFIG:-}" ] && [ -z "${OPENLINEAGE_URL:-}" ] && ! env | grep -q '^OPENLINEAGE__TRANSPORT__'; then
  mkdir -p "$DEMO_DIR/lineage"
  export OPENLINEAGE__TRANSPORT__TYPE=file
  export OPENLINEAGE__TRANSPORT__LOG_FILE_PATH="$DEMO_DIR/lineage/events.jsonl"
  export OPENLINEAGE__TRANSPORT__APPEND=true
fi

say "Airflow home $AIRFLOW_HOME (airflow db migrate)"
mkdir -p "$AIRFLOW_HOME"
if ! airflow db migrate >"$DEMO_DIR/db-migrate.log" 2>&1; then
  tail -n 30 "$DEMO_DIR/db-migrate.log" >&2
  exit 1
fi

say "run every DAG in dependency order (log: $DEMO_DIR/run.log)"
: >"$DEMO_DIR/run.log"
set +e
python scripts/localrun.py run --project "$ROOT" >"$DEMO_DIR/run.log" 2>&1 &
run_pid=$!
tail -n +1 -f "$DEMO_DIR/run.log" --pid "$run_pid" | grep --line-buffered '^localrun: ' | sed -u 's/^localrun: /  /'
wait "$run_pid"
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  tail -n 40 "$DEMO_DIR/run.log" >&2
  echo "demo: the run failed (exit $rc); full log: $DEMO_DIR/run.log" >&2
  exit "$rc"
fi
grep '^RESULT ' "$DEMO_DIR/run.log" | tail -n 1 | sed 's/^RESULT //' >"$DEMO_DIR/runs.json"

say "result"
python scripts/localrun.py report --project "$ROOT" --runs "$DEMO_DIR/runs.json"
printf '\nEverything is in %s (delete it when done).\n' "$DEMO_DIR"
