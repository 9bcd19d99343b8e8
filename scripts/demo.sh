#!/usr/bin/env bash
# The bundled example, end to end, on this machine:
#
#   npm run demo                              # warehouse: the embedded DuckDB file
#   npm run demo -- --warehouse postgres      # warehouse: a PostgreSQL database
#
# 1. compiles contracts/ into generated/ (contract-assets compile);
# 2. builds or reuses the Python environment (.venv, scripts/python-env.sh) and the PostgreSQL
#    and libfaketime binaries the live stack needs (scripts/ensure-postgres.sh);
# 3. step 1, on a live Airflow (scripts/livedemo.py, scripts/livestack.py): PostgreSQL metadata
#    database, api-server, scheduler with the LocalExecutor, dag-processor and triggerer on
#    loopback; every DAG unpaused, only the roots triggered through the REST API, the scheduler
#    starts everything else from Asset events; prints which runs the scheduler started and from
#    which Asset events, what was published (rows, quality status), and the freshness
#    monitor's state per asset (one run of the monitor DAG, triggered at the end);
# 4. step 2 (DuckDB warehouse only; a seeded failure, since the bundled data passes every error
#    rule): copies the
#    project's inputs, appends one invoice in a currency the contract does not allow (JPY) to the
#    copy's invoices sample file, compiles the copy and runs only billing.invoices_raw against
#    step 1's warehouse in a second Airflow home (DAG.test(), SQLite metadata DB): the error
#    rule blocks the publish;
# 5. prints where the OpenLineage events are and how many of each type each emitter wrote.
#
# Lineage transport: when the environment configures one (OPENLINEAGE__TRANSPORT__*,
# OPENLINEAGE_CONFIG, OPENLINEAGE_URL, or an openlineage.yml the client finds), the runtime and the
# Airflow OpenLineage provider send there; otherwise the demo configures a file in the demo folder. The demo folder is kept for
# inspection (its path is printed); set CONTRACT_ASSETS_DEMO_DIR to choose it (it must be empty
# or absent).
#
# The four dbt contracts run the bundled dbt project (dbt/finance) with real dbt from .venv-dbt
# (built by scripts/python-env.sh); the python producer's package is put on PYTHONPATH
# (orchestration/jobs).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

WAREHOUSE=duckdb
while [ "$#" -gt 0 ]; do
  case "$1" in
    --warehouse) WAREHOUSE="${2:-}"; shift 2 ;;
    --warehouse=*) WAREHOUSE="${1#--warehouse=}"; shift ;;
    *) echo "demo: unknown option $1 (use --warehouse duckdb|postgres)" >&2; exit 2 ;;
  esac
done
case "$WAREHOUSE" in duckdb | postgres) ;; *) echo "demo: --warehouse must be duckdb or postgres" >&2; exit 2 ;; esac

say() { printf '\n== %s\n' "$*"; }

say "compile contracts/ -> generated/"
if [ ! -f dist/compiler/cli.js ]; then
  npm run --silent build
fi
node bin/contract-assets.js compile

say "Python environment (.venv), PostgreSQL and libfaketime binaries"
bash scripts/python-env.sh
bash scripts/ensure-postgres.sh

DEMO_DIR="${CONTRACT_ASSETS_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/contract-assets-demo.XXXXXX")}"
mkdir -p "$DEMO_DIR"
if [ -n "$(ls -A "$DEMO_DIR")" ]; then
  echo "demo: $DEMO_DIR is not empty" >&2
  exit 2
fi
DEMO_DIR="$(cd "$DEMO_DIR" && pwd)"
# as root, the live stack's PostgreSQL runs as the postgres user, which must reach its folder
# below this one (mktemp makes it 0700)
if [ "$(id -u)" = 0 ]; then chmod 755 "$DEMO_DIR"; fi

unset AIRFLOW_CONFIG AIRFLOW__CORE__UNIT_TEST_MODE
export AIRFLOW_HOME="$DEMO_DIR/airflow"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_FOLDER="$ROOT/generated/dags"
export CONTRACT_ASSETS_WAREHOUSE="$DEMO_DIR/live/stack/warehouse.duckdb"
# The bundled config names warehouse_conn_id "warehouse": a named Connection must exist.
export AIRFLOW_CONN_WAREHOUSE="duckdb://$DEMO_DIR/live/stack/warehouse.duckdb"
JOBS_PATH="${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH="$ROOT/orchestration/jobs$JOBS_PATH"
export PATH="$ROOT/.venv/bin:$PATH"

# The OpenLineage client's own configuration, in its order: a config file (OPENLINEAGE_CONFIG,
# ./openlineage.yml, ~/.openlineage/openlineage.yml), OPENLINEAGE__TRANSPORT__*, OPENLINEAGE_URL.
# Only when none is there does the demo choose a file in the demo folder.
if [ -z "${OPENLINEAGE_CONFIG:-}" ] && [ -z "${OPENLINEAGE_URL:-}" ] && ! env | grep -q '^OPENLINEAGE__TRANSPORT__' &&
  [ ! -f "$ROOT/openlineage.yml" ] && [ ! -f "${HOME:-/nonexistent}/.openlineage/openlineage.yml" ]; then
  mkdir -p "$DEMO_DIR/lineage"
  export OPENLINEAGE__TRANSPORT__TYPE=file
  export OPENLINEAGE__TRANSPORT__LOG_FILE_PATH="$DEMO_DIR/lineage/events.jsonl"
  export OPENLINEAGE__TRANSPORT__APPEND=true
fi

say "step 1: the bundled example on a live Airflow, driven by Asset events (warehouse: $WAREHOUSE; logs: $DEMO_DIR/live)"
mkdir -p "$DEMO_DIR/live"
python scripts/livedemo.py --project "$ROOT" --work "$DEMO_DIR/live" --warehouse "$WAREHOUSE"

if [ "$WAREHOUSE" != duckdb ]; then
  say "lineage"
  python scripts/localrun.py lineage
  printf '\nEverything is in %s (delete it when done).\n' "$DEMO_DIR"
  exit 0
fi

say "Airflow home $AIRFLOW_HOME for step 2 (airflow db migrate)"
mkdir -p "$AIRFLOW_HOME"
if ! airflow db migrate >"$DEMO_DIR/db-migrate.log" 2>&1; then
  tail -n 30 "$DEMO_DIR/db-migrate.log" >&2
  exit 1
fi
# step 2 starts from the same freshly migrated metadata DB
cp "$AIRFLOW_HOME/airflow.db" "$DEMO_DIR/airflow-migrated.db"

# run_dags LOG PROJECT [localrun args...]: run DAGs, show progress, leave LOG.runs.json
run_dags() {
  local log="$1" project="$2"
  shift 2
  : >"$log"
  set +e
  python scripts/localrun.py run --project "$project" "$@" >"$log" 2>&1 &
  local run_pid=$!
  tail -n +1 -f "$log" --pid "$run_pid" | grep --line-buffered '^localrun: ' | sed -u 's/^localrun: /  /'
  wait "$run_pid"
  local rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "demo: the run failed (exit $rc); full log: $log" >&2
    exit "$rc"
  fi
  grep '^RESULT ' "$log" | tail -n 1 | sed 's/^RESULT //' >"$log.runs.json"
}

SEEDED="$DEMO_DIR/seeded-project"
BAD_ROW='INV-26099,A-1001,C-2001,2026-03-01,2026-03-31,JPY,open,2026-03-10T00:00:00Z'
say "step 2: a seeded failure: one bad invoice row, in a copy of the project"
cat <<EOF
  Seeded on purpose: the bundled data passes every error rule, so this step appends one row
  to a COPY of orchestration/sample_data/billing_platform/invoices.csv (in $SEEDED):
    $BAD_ROW
  Its currency JPY is outside the contract's validValues [EUR, USD, GBP, CHF]: the error rule
  invalidValues_currency of billing.invoices_raw (on_failure: block_publish) must fail, so
  nothing may be published and step 1's billing.invoices_raw table must stay as it is.
  The copy is compiled and only billing.invoices_raw runs, in a second Airflow home, against
  step 1's warehouse (log: $DEMO_DIR/seeded-run.log).
EOF
for part in contracts sql dbt orchestration/airflow orchestration/sample_data orchestration/jobs; do
  mkdir -p "$SEEDED/$(dirname "$part")"
  cp -R "$ROOT/$part" "$SEEDED/$part"
done
find "$SEEDED" \( -name __pycache__ -o -name target -o -name logs \) -type d -prune -exec rm -rf {} +
printf '%s\n' "$BAD_ROW" >>"$SEEDED/orchestration/sample_data/billing_platform/invoices.csv"
node bin/contract-assets.js compile --root "$SEEDED" >"$DEMO_DIR/seeded-compile.log" 2>&1 || {
  cat "$DEMO_DIR/seeded-compile.log" >&2
  exit 1
}
(
  export AIRFLOW_HOME="$DEMO_DIR/airflow-seeded"
  export AIRFLOW__CORE__DAGS_FOLDER="$SEEDED/generated/dags"
  export PYTHONPATH="$SEEDED/orchestration/jobs$JOBS_PATH"
  mkdir -p "$AIRFLOW_HOME"
  cp "$DEMO_DIR/airflow-migrated.db" "$AIRFLOW_HOME/airflow.db"
  run_dags "$DEMO_DIR/seeded-run.log" "$SEEDED" --only billing.invoices_raw --no-seed
  python scripts/localrun.py report --project "$SEEDED" --runs "$DEMO_DIR/seeded-run.log.runs.json"
)

say "lineage"
python scripts/localrun.py lineage --log "$DEMO_DIR/seeded-run.log"
printf '\nEverything is in %s (delete it when done).\n' "$DEMO_DIR"
