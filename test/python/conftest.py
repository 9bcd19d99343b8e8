"""Pytest configuration for the Python side of contract-assets.

Airflow reads its configuration when it is first imported, so the
environment is set here, at conftest import time, before any test module
imports airflow:

* ``AIRFLOW_HOME`` points at a fresh temporary directory for the whole test
  session (removed at the end), so tests never read or write ``~/airflow``.
* ``AIRFLOW__CORE__LOAD_EXAMPLES=False`` keeps Airflow's example DAGs out.

``AIRFLOW__CORE__UNIT_TEST_MODE`` is deliberately NOT set: in Airflow 3.2 it
loads a test config with ``create_cron_data_intervals = true``, which turns
``schedule="0 3 * * *"`` into a CronDataIntervalTimetable instead of the
production default CronTriggerTimetable, so tests would see different
schedules than a real deployment.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import pytest

_AIRFLOW_HOME: str = tempfile.mkdtemp(prefix="contract-assets-airflow-home-")
os.environ["AIRFLOW_HOME"] = _AIRFLOW_HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ.pop("AIRFLOW_CONFIG", None)
os.environ.pop("AIRFLOW__CORE__UNIT_TEST_MODE", None)


_SUMMARY_KEY = pytest.StashKey[list[str]]()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the session's temporary AIRFLOW_HOME."""
    shutil.rmtree(_AIRFLOW_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def terminal_summary(request: pytest.FixtureRequest) -> list[str]:
    """Lines a test wants shown in the terminal summary (printed without ``-s``, pass or fail)."""
    return request.config.stash.setdefault(_SUMMARY_KEY, [])


def pytest_terminal_summary(
    terminalreporter: Any, exitstatus: int, config: pytest.Config
) -> None:
    """Print what tests put into :func:`terminal_summary`, e.g. the e2e lineage event counts."""
    lines = config.stash.get(_SUMMARY_KEY, [])
    if lines:
        terminalreporter.section("contract-assets observations")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def airflow_home() -> str:
    """Path of the temporary AIRFLOW_HOME used for this test session."""
    return _AIRFLOW_HOME
