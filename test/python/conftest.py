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
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# scripts/livestack.py (the live Airflow stack) is shared with the demo; import it from there.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from livestack import TEST_CLOCK, LiveStack, StackUnavailable  # noqa: E402

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


@pytest.fixture(autouse=True)
def _restore_openlineage_environment() -> Iterator[None]:
    """Put the ``OPENLINEAGE*`` environment back after each test.

    ``OpenLineageClient()`` writes to ``os.environ`` itself: given ``OPENLINEAGE_URL`` it adds
    ``OPENLINEAGE__TRANSPORT__TRANSPORTS__DEFAULT_HTTP__*`` (openlineage-python, client.py), which
    ``monkeypatch`` does not know to undo. Left behind, they send every later test's lineage,
    and the live stack's, to a port a finished test opened.
    """
    before = {k: v for k, v in os.environ.items() if k.startswith("OPENLINEAGE")}
    yield
    for key in [k for k in os.environ if k.startswith("OPENLINEAGE") and k not in before]:
        del os.environ[key]
    os.environ.update(before)


@pytest.fixture(scope="session")
def airflow_home() -> str:
    """Path of the temporary AIRFLOW_HOME used for this test session."""
    return _AIRFLOW_HOME


# --------------------------------------------------------------------------- the live stack

#: The fixture name; tests that use it run last (see pytest_collection_modifyitems).
LIVE_STACK_FIXTURE = "live_stack"
#: The CeleryExecutor stack's fixture; its tests run after the live stack's.
CELERY_STACK_FIXTURE = "celery_stack"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the tests that use the live stack last, in their collected order, and those of the
    Celery stack after them: each stack starts once and stays up until its last test (the Celery
    fixture stops the other first), so nothing runs beside a stack (2 cores)."""
    def rank(item: pytest.Item) -> int:
        names = getattr(item, "fixturenames", ())
        return 2 if CELERY_STACK_FIXTURE in names else 1 if LIVE_STACK_FIXTURE in names else 0

    items[:] = sorted(items, key=rank)  # sorted() is stable: collected order within each rank


@pytest.fixture(scope="session")
def live_stack(request: pytest.FixtureRequest, terminal_summary: list[str]) -> Iterator[LiveStack]:
    """One live Airflow 3.2 stack for the whole session (``scripts/livestack.py``).

    PostgreSQL metadata database and PostgreSQL warehouse (Connection ``warehouse``), a fresh
    AIRFLOW_HOME, ``airflow db migrate``, api-server, scheduler (LocalExecutor), dag-processor
    and triggerer on loopback, over this repository's ``generated/dags`` (compile first), plus the
    ``projects`` bundle for DAGs a test brings (:meth:`LiveStack.add_project`) and the ``git``
    bundle, a ``GitDagBundle`` over a local repository (:meth:`LiveStack.commit_project`). Every bundled DAG
    is registered before the fixture returns. DAGs are paused at creation: a test unpauses and
    triggers what it runs, and must leave the stack quiescent
    (:meth:`LiveStack.wait_until_quiescent`) for the next one. The stack's clock is fixed at
    :data:`livestack.TEST_CLOCK` (then advancing in real time): compare Airflow's timestamps with
    :meth:`LiveStack.now`, not with this process's clock. The REST client and the waits are
    documented in ``scripts/livestack.py``.

    Skipped, loudly, when the environment cannot run it (:class:`StackUnavailable`). Stopped at
    the end of the session; its logs are kept (path printed) when a test failed.
    """
    yield from _session_stack(request, terminal_summary, "live stack")


@pytest.fixture(scope="session")
def celery_stack(request: pytest.FixtureRequest, terminal_summary: list[str]) -> Iterator[LiveStack]:
    """The CeleryExecutor stack (issue 36): as :func:`live_stack`, with ``executor="celery"``,
    two ``airflow celery worker`` processes that share nothing on disk, a ``redis-server`` broker,
    and its DAGs from the ``git`` bundle only (a bare repository; the test commits the project).
    Its tests run after every :func:`live_stack` test, and the LocalExecutor stack is stopped
    first: two stacks never run side by side on 2 cores."""
    for running in list(_RUNNING.values()):
        running.failed = running.failed or request.session.testsfailed > 0  # keep its logs then
        running.stop()
    # a killed worker's task is failed (then retried) after this many seconds without a heartbeat
    # (test_live_celery_faults.py); Airflow's default is 300
    heartbeat = {"AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "60"}
    yield from _session_stack(
        request, terminal_summary, "celery stack", executor="celery", workers=2, dags_folder_bundle=False, env_extra=heartbeat
    )


#: The session's started stacks, by name (the Celery fixture stops the LocalExecutor one first).
_RUNNING: dict[str, LiveStack] = {}


def _session_stack(request: pytest.FixtureRequest, terminal_summary: list[str], name: str, **options: Any) -> Iterator[LiveStack]:
    import json
    import signal
    import time

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    # A SIGTERM (a CI timeout, `kill`) becomes an interrupt, so pytest still stops the stack.
    previous = signal.signal(signal.SIGTERM, interrupt)
    started = time.monotonic()
    failed_before = request.session.testsfailed
    work = Path(tempfile.mkdtemp(prefix="contract-assets-live-"))
    # the tests read the stack's own lineage file: no OpenLineage setting of this process applies
    stack = LiveStack(work=work, clock=TEST_CLOCK, git_bundle=work / "git-bundle", inherit_lineage_config=False, **options)
    try:
        stack.start()
        if stack.dags_folder_bundle:
            manifest = json.loads(
                (Path(__file__).resolve().parents[2] / "generated" / "manifest.json").read_text(encoding="utf-8")
            )
            stack.wait_for_dags(d["dag_id"] for d in manifest["dags"])
    except StackUnavailable as exc:
        stack.stop()
        signal.signal(signal.SIGTERM, previous)
        message = f"ENVIRONMENT: the {name} cannot start here, its tests are SKIPPED: {exc}"
        warnings.warn(message, stacklevel=2)
        print(f"\n{'!' * 20} {message} {'!' * 20}", file=sys.stderr)
        pytest.skip(message)
    except BaseException:
        stack.failed = True
        stack.stop()
        signal.signal(signal.SIGTERM, previous)
        raise
    terminal_summary.append(f"{name}: started in {time.monotonic() - started:.1f} s at {stack.url}")
    _RUNNING[name] = stack
    try:
        yield stack
    finally:
        if request.session.testsfailed > failed_before:
            stack.failed = True
        stack.stop()
        _RUNNING.pop(name, None)
        signal.signal(signal.SIGTERM, previous)
        terminal_summary.append(f"{name}: up for {time.monotonic() - started:.1f} s in total")
