#!/usr/bin/env bash
# Run the Python tests (test/python) in the project venv.
#
#   bash scripts/test-python.sh [extra pytest args...]
#
# Builds or refreshes .venv and .venv-datacontract first (fast no-ops when up to date), and makes sure the
# PostgreSQL server binaries exist (scripts/ensure-postgres.sh; apt-get only when missing).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/python-env.sh
# datacontract-cli in its own environment, for the ODCS cross-checks (docs/adr/0014-odcs-bridge.md).
bash scripts/datacontract-env.sh
# PostgreSQL server binaries for the warehouse tests (installs them only when missing).
bash scripts/ensure-postgres.sh
exec .venv/bin/python -m pytest test/python -q "$@"
