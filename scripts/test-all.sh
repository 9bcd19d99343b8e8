#!/usr/bin/env bash
# Every test suite of the project: the TypeScript suites (vitest), then the Python suites
# (pytest, against real Airflow 3.2 in the project's .venv, which this builds when needed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

npx --no-install tsc -p tsconfig.json
npx --no-install vitest run
bash scripts/test-python.sh
