#!/usr/bin/env bash
# Regenerate a dbt project's committed manifest.json after changing its models:
#
#   bash scripts/dbt-parse.sh dbt/finance
#
# Builds the Python environments first (scripts/python-env.sh: .venv-dbt holds dbt), then runs
# `dbt parse` through scripts/dbt_parse.py, which writes <project>/manifest.json without local paths.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -eq 1 ] || { echo "usage: bash scripts/dbt-parse.sh <dbt project folder>" >&2; exit 2; }
project="$(cd "$1" && pwd)"
bash "$ROOT/scripts/python-env.sh" >/dev/null
exec "$ROOT/.venv-dbt/bin/python" "$ROOT/scripts/dbt_parse.py" "$project"
