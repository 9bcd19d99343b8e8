"""Fault 4 replayed: emission keeps its own run cycle.

(a) A cleared DAG run is a new OpenLineage run; whichever task runs first after the clear sends
its START, also when only ``audit`` or ``publish`` was cleared. (b) An abandoned send is never
delivered after the bound: no attempt reaches the backend once the task stopped waiting.
(c) One budget per task try, retries bounded and configurable, the log naming the real cause.

Backends are real HTTP servers on 127.0.0.1 (a free port) started and stopped here.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages
from contract_runtime.lineage import emit_fail, emit_start
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse
from lineage_testkit import (
    HttpBackend,
    clear_lineage_budgets,
    closed_port,
    dag_entry,
    load_manifest,
    make_run,
    running_backend,
    use_http_transport,
)
from runtime_support import dag_entry as runtime_dag_entry
from runtime_support import run_identity, write_manifest

LOGGER = "contract_runtime.lineage"
BUDGET = 1.0


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[HttpBackend]:
    with running_backend(request.param) as server:
        yield server


def _use_http(monkeypatch: pytest.MonkeyPatch, url: str, retries: int | None = None) -> None:
    use_http_transport(monkeypatch, url, timeout=BUDGET, retries=retries)


@pytest.fixture(autouse=True)
def _fresh_budgets() -> Iterator[None]:
    """Each test is its own task try: budgets spent by another test do not carry over."""
    clear_lineage_budgets()
    yield
    clear_lineage_budgets()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]


def _emit_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "contract-assets-lineage-emit"]


MANIFEST = load_manifest()
DAG = dag_entry(MANIFEST, "finance.invoices_curated")


# --- (c) one budget per task, bounded retries, the real cause --------------------------------


@pytest.mark.parametrize("backend", ["hang"], indirect=True)
def test_a_failing_task_spends_one_budget_for_start_and_fail(
    backend: HttpBackend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    _use_http(monkeypatch, f"http://127.0.0.1:{backend.server_port}")
    run = make_run(DAG["dag_id"], "produce")
    started = time.monotonic()
    emit_start(MANIFEST, DAG, run)
    emit_fail(MANIFEST, DAG, run, RuntimeError("boom"), "produce")
    elapsed = time.monotonic() - started
    assert elapsed < BUDGET + 0.6, f"START + FAIL of one task waited {elapsed:.2f} s"
    start_line, fail_line = _warnings(caplog)
    assert "START" in start_line and "no answer from the backend" in start_line
    assert "FAIL" in fail_line and "lineage budget of 1.0 s is spent" in fail_line
    # another task of the run has its own budget
    caplog.clear()
    emit_fail(MANIFEST, DAG, make_run(DAG["dag_id"], "audit"), RuntimeError("boom"), "audit")
    assert "no answer from the backend" in _warnings(caplog)[0]


@pytest.mark.parametrize("backend", ["500"], indirect=True)
@pytest.mark.parametrize(("retries", "attempts"), [(None, 3), (0, 1), (4, 5)])
def test_a_500_is_retried_a_bounded_configurable_number_of_times_and_named(
    backend: HttpBackend,
    retries: int | None,
    attempts: int,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    _use_http(monkeypatch, f"http://127.0.0.1:{backend.server_port}", retries)
    monkeypatch.setenv("CONTRACT_ASSETS_LINEAGE_TIMEOUT", "10")
    emit_start(MANIFEST, DAG, make_run(DAG["dag_id"]))
    assert len(backend.arrivals) == attempts
    (line,) = _warnings(caplog)
    assert "the backend answered HTTP 500" in line and f"({attempts} attempt" in line
    assert "unreachable" not in line and "slow" not in line


def test_an_unreachable_backend_is_named_unreachable(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    _use_http(monkeypatch, f"http://127.0.0.1:{closed_port()}", retries=1)
    emit_start(MANIFEST, DAG, make_run(DAG["dag_id"]))
    (line,) = _warnings(caplog)
    assert "the backend is unreachable" in line and "(2 attempts)" in line
    assert "500" not in line


# --- (b) no late delivery --------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["slow500"], indirect=True)
def test_an_abandoned_send_never_reaches_the_backend_after_the_bound(
    backend: HttpBackend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Retries against a slow failing backend stop at the bound; nothing arrives after it."""
    _use_http(monkeypatch, f"http://127.0.0.1:{backend.server_port}", retries=10)
    emit_start(MANIFEST, DAG, make_run(DAG["dag_id"]))
    returned = time.monotonic()
    time.sleep(2.5)  # longer than the client's whole retry series would take
    late = [t - returned for t in backend.arrivals if t > returned]
    assert late == [], f"requests reached the backend {late} s after the task stopped waiting"
    assert backend.arrivals, "the send was attempted"


@pytest.mark.parametrize("backend", ["hang"], indirect=True)
def test_a_hanging_send_ends_at_the_bound(
    backend: HttpBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempt times out at the bound; no thread is left holding a request to deliver later."""
    _use_http(monkeypatch, f"http://127.0.0.1:{backend.server_port}")
    emit_start(MANIFEST, DAG, make_run(DAG["dag_id"]))
    deadline = time.monotonic() + 1.0
    while _emit_threads() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _emit_threads() == []
    assert len(backend.arrivals) == 1  # a timeout is not retried: the budget is spent


# --- (a) START after a cleared DAG run -------------------------------------------------------

GOOD_SQL = "select 'o' || i as order_id, cast(i as decimal(18,2)) as amount, 'open' as status, now() as updated_at from range(1, 4) t(i)"


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    calls: list[tuple[str, Any]] = []
    module = types.ModuleType("contract_runtime.lineage")
    for name in ("emit_start", "emit_assertions", "emit_complete", "emit_fail"):
        setattr(module, name, lambda *args, _n=name: calls.append((_n, args[2])))
    module.duckdb_warehouse_namespace = lambda path: f"duckdb://{path}"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "contract_runtime.lineage", module)
    return calls


def _events(calls: list[tuple[str, Any]]) -> list[tuple[str, str, int]]:
    return [(name, run.task_id, run.clear_number) for name, run in calls]


def test_a_cleared_run_starts_again_whichever_task_was_cleared(tmp_path: Path, hook: list[Any]) -> None:
    dag = runtime_dag_entry(producer={"type": "sql", "path": "x.sql", "sql": GOOD_SQL})
    manifest = write_manifest(tmp_path, [dag])
    db = tmp_path / "w.duckdb"

    def opener(conn_id: str | None) -> Warehouse:
        return DuckDBWarehouse(db)

    def task(task_id: str, clear_number: int, try_number: int, first_try: int) -> Any:
        run = dataclasses.replace(
            run_identity(run_id="manual__1", task_id=task_id, try_number=try_number),
            clear_number=clear_number,
            first_try_number=first_try,
        )
        if task_id == "produce":
            return stages.produce(manifest, "sales.orders", run, opener=opener)
        if task_id == "audit":
            return stages.audit(manifest, "sales.orders", run, opener=opener, produced=produced)
        return stages.publish(manifest, "sales.orders", run, summary, opener=opener)

    # clear 0: produce and audit run; publish fails for a reason a retry cannot fix (not shown)
    produced = task("produce", 0, 1, 1)
    summary = task("audit", 0, 1, 1)
    assert _events(hook) == [("emit_start", "produce", 0), ("emit_assertions", "audit", 0)]
    # the user clears audit (and downstream): clear_number 1, produce does not run again
    hook.clear()
    summary = task("audit", 1, 2, 2)
    task("publish", 1, 2, 2)
    assert _events(hook) == [
        ("emit_start", "audit", 1),
        ("emit_assertions", "audit", 1),
        ("emit_complete", "publish", 1),
    ]
    # only publish is cleared: publish starts the new run
    hook.clear()
    task("publish", 2, 3, 3)
    assert _events(hook)[0] == ("emit_start", "publish", 2)
    # the whole run is cleared: produce starts it, audit and publish do not start it again
    hook.clear()
    produced = task("produce", 3, 2, 2)
    summary = task("audit", 3, 3, 3)
    task("publish", 3, 4, 4)
    assert _events(hook) == [
        ("emit_start", "produce", 3),
        ("emit_assertions", "audit", 3),
        ("emit_complete", "publish", 3),
    ]
    # a retry of audit in the same clear does not start the run again
    hook.clear()
    task("audit", 3, 4, 3)
    assert [e for e in _events(hook) if e[0] == "emit_start"] == []
