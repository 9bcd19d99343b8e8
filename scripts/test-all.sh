#!/usr/bin/env bash
# Every test suite of the project: the TypeScript suites (vitest), mypy --strict over the runtime,
# then the Python suites (pytest, against real Airflow 3.2 in the project's .venv, which this
# builds when needed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

npm run --silent build
npx --no-install vitest run
# The runtime type-checks strictly (mypy, from requirements.lock) before its tests run.
bash scripts/python-env.sh
.venv/bin/python -m mypy --strict --cache-dir .venv/mypy-cache orchestration/contract_runtime
bash scripts/test-python.sh
