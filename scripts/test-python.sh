#!/usr/bin/env bash
# Run the Python tests (test/python) in the project venv.
#
#   bash scripts/test-python.sh [extra pytest args...]
#
# Builds or refreshes .venv first (fast no-op when it is up to date).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/python-env.sh
exec .venv/bin/python -m pytest test/python -q "$@"
