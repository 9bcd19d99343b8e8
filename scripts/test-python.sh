#!/usr/bin/env bash
# Run the Python tests (test/python) in the project venv.
#
#   bash scripts/test-python.sh [extra pytest args...]
#
# Builds or refreshes .venv first (fast no-op when it is up to date), and makes sure the
# PostgreSQL server binaries exist (scripts/ensure-postgres.sh; apt-get only when missing).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/python-env.sh
# PostgreSQL server binaries for the warehouse tests (installs them only when missing).
bash scripts/ensure-postgres.sh
exec .venv/bin/python -m pytest test/python -q "$@"
