"""The Airflow operators: parse-time import cost, failure callbacks, XCom and Asset event extra,
and the mapping of non-retryable errors to AirflowFailException (no full DAG run here: that is
test_e2e.py)."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from runtime_support import dag_entry, write_manifest

HEAVY = (
    "duckdb",
    "psycopg2",
    "contract_runtime.warehouse",
    "contract_runtime.stages",
    "contract_runtime.quality",
    "contract_runtime.producers",
)


def test_operators_import_nothing_heavy_at_parse_time() -> None:
    code = (
        "import sys, json\n"
        "import airflow.sdk\n"
        "from airflow.sdk import BaseOperator\n"
        "before = set(sys.modules)\n"
        "import contract_runtime.operators\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    added = json.loads(out.stdout.strip().splitlines()[-1])
    assert added == ["contract_runtime", "contract_runtime.operators"], added
    assert not any(m.startswith(HEAVY) for m in added)


class FakeTI:
    def __init__(self, pulled: Any = None) -> None:
        self.dag_id = "sales.orders"
        self.run_id = "manual__2026-04-15T00:00:00+00:00"
        self.task_id = "audit"
        self.try_number = 1
        self.max_tries = 0
        self.map_index = -1
        self.pushed: dict[str, Any] = {}
        self.pulled = pulled

    def xcom_push(self, key: str, value: Any) -> None:
        json.dumps(value)  # XCom values must be JSON
        self.pushed[key] = value

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        if (task_ids, key) == ("produce", "return_value"):
            return {"staging": {}, "producer": {}, "clear_number": 0}  # what produce returns
        assert (task_ids, key) == ("audit", "quality")
        return self.pulled


class FakeDagRun:
    run_after = datetime.datetime(2026, 4, 15, tzinfo=datetime.UTC)
    logical_date = datetime.datetime(2026, 4, 15, tzinfo=datetime.UTC)


def context(ti: FakeTI, **kw: Any) -> dict[str, Any]:
    from airflow.sdk.execution_time.context import OutletEventAccessors

    ctx = {
        "ti": ti,
        "dag_run": FakeDagRun(),
        "logical_date": FakeDagRun.logical_date,
        "outlet_events": OutletEventAccessors(),
    }
    ctx.update(kw)
    return ctx


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CONTRACT_ASSETS_WAREHOUSE", str(tmp_path / "op.duckdb"))
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE", f"duckdb://{tmp_path / 'op.duckdb'}")
    dag = dag_entry(
        producer={
            "type": "sql",
            "path": "x.sql",
            "sql": "select 'o' as order_id, 1.0 as amount, 'x' as status, now() as updated_at",
        }
    )
    return write_manifest(tmp_path, [dag])


def test_wap_through_the_operators_sets_xcom_and_asset_extra(project: str) -> None:
    from airflow.sdk import Asset
    from contract_runtime.operators import (
        AuditOperator,
        ProduceOperator,
        PublishOperator,
        lineage_on_failure,
    )

    asset = Asset(name="sales.orders", uri="x-datalake://curated/sales/orders", group="sales")
    produce = ProduceOperator(task_id="produce", contract_id="sales.orders", manifest_path=project)
    audit = AuditOperator(task_id="audit", contract_id="sales.orders", manifest_path=project)
    publish = PublishOperator(task_id="publish", contract_id="sales.orders", manifest_path=project, outlets=[asset])
    assert produce.on_failure_callback == [lineage_on_failure] or produce.on_failure_callback == lineage_on_failure

    ti = FakeTI()
    staged = produce.execute(context(ti))
    assert staged["staging"]["orders"].startswith("_ca_staging.sales__orders__")
    assert audit.execute(context(ti)) == {"status": "passed"}
    verdict = ti.pushed["quality"]
    assert verdict["status"] == "passed" and verdict["datasets"][0]["results"][0]["name"] == "order_id_not_null"

    ctx = context(FakeTI(pulled=verdict))
    result = publish.execute(ctx)
    assert result == [
        {
            "asset": "sales.orders",
            "table": "sales.orders",
            "row_count": 1,
            "quality_status": "passed",
            "failed_rules": [],
        }
    ]
    from contract_runtime.lineage.runid import contract_run_id
    from contract_runtime.run import RunIdentity

    assert ctx["outlet_events"][asset].extra == {
        "row_count": 1,
        "quality_status": "passed",
        "failed_rules": [],
        "contract_id": "sales.orders",
        "contract_version": "1.0.0",
        # our contract run, in the OpenLineage provider's Asset-event convention (ADR 0010)
        "openlineage": {
            "parentJobNamespace": "test.sales",
            "parentJobName": "sales.orders",
            "parentRunId": contract_run_id(RunIdentity.from_context(ctx)),
        },
    }


def test_quality_gate_fails_without_retry_and_pushes_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk.exceptions import AirflowFailException
    from contract_runtime.operators import AuditOperator, ProduceOperator

    monkeypatch.setenv("CONTRACT_ASSETS_WAREHOUSE", str(tmp_path / "gate.duckdb"))
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE", f"duckdb://{tmp_path / 'gate.duckdb'}")
    dag = dag_entry(
        producer={
            "type": "sql",
            "path": "x.sql",
            "sql": "select null::varchar as order_id, 1.0 as amount, 'x' as status, now() as updated_at",
        }
    )
    manifest = write_manifest(tmp_path, [dag])
    ti = FakeTI()
    ProduceOperator(task_id="produce", contract_id="sales.orders", manifest_path=manifest).execute(context(ti))
    audit = AuditOperator(task_id="audit", contract_id="sales.orders", manifest_path=manifest)
    with pytest.raises(AirflowFailException, match="order_id_not_null"):
        audit.execute(context(ti))
    assert ti.pushed["quality"]["status"] == "blocked"
    assert isinstance(audit._ca_error, Exception)


def test_other_errors_stay_retryable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import duckdb
    from contract_runtime.operators import ProduceOperator

    monkeypatch.setenv("CONTRACT_ASSETS_WAREHOUSE", str(tmp_path / "r.duckdb"))
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE", f"duckdb://{tmp_path / 'r.duckdb'}")
    dag = dag_entry(producer={"type": "sql", "path": "x.sql", "sql": "select * from no_such_schema.no_such_table"})
    manifest = write_manifest(tmp_path, [dag])
    with pytest.raises(duckdb.CatalogException):
        ProduceOperator(task_id="produce", contract_id="sales.orders", manifest_path=manifest).execute(
            context(FakeTI())
        )


def test_failure_callback_default_respects_a_given_one(project: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from contract_runtime import stages
    from contract_runtime.operators import AuditOperator, lineage_on_failure

    def mine(ctx: Any) -> None:
        pass

    given = AuditOperator(task_id="a", contract_id="sales.orders", manifest_path=project, on_failure_callback=mine)
    assert lineage_on_failure not in (
        given.on_failure_callback if isinstance(given.on_failure_callback, list) else [given.on_failure_callback]
    )

    seen: list[tuple[Any, ...]] = []
    monkeypatch.setattr(stages, "lineage_fail", lambda *a: seen.append(a))
    op = AuditOperator(task_id="audit", contract_id="sales.orders", manifest_path=project)
    err = ValueError("x")
    lineage_on_failure({"task": op, "ti": FakeTI(), "dag_run": FakeDagRun(), "exception": err})
    assert (
        seen and seen[0][0] == project and seen[0][1] == "sales.orders" and seen[0][3] is err and seen[0][4] == "audit"
    )
    # dag.test() gives no context["exception"]: the error recorded by execute is used
    op._ca_error = KeyError("recorded")
    lineage_on_failure({"task": op, "ti": FakeTI(), "dag_run": FakeDagRun()})
    assert isinstance(seen[-1][3], KeyError)
    # never raises, even with a useless context
    lineage_on_failure({})


def test_configuration_errors_fail_without_retry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing named Connection and a type the warehouse cannot take fail the task at once."""
    from airflow.sdk.exceptions import AirflowFailException
    from contract_runtime.operators import ProduceOperator

    monkeypatch.setenv("CONTRACT_ASSETS_WAREHOUSE", str(tmp_path / "c.duckdb"))
    monkeypatch.delenv("AIRFLOW_CONN_WAREHOUSE", raising=False)
    manifest = write_manifest(tmp_path, [dag_entry()])
    produce = ProduceOperator(task_id="produce", contract_id="sales.orders", manifest_path=manifest)
    with pytest.raises(AirflowFailException, match="contract 'sales.orders': the warehouse Connection 'warehouse'"):
        produce.execute(context(FakeTI()))
    assert not (tmp_path / "c.duckdb").exists()

    from contract_runtime.quality import QualityRuleError
    from contract_runtime.sqlutil import SqlTypeError
    from contract_runtime.stages import non_retryable_errors
    from contract_runtime.warehouse import WarehouseError

    for error in (SqlTypeError("bad type"), QualityRuleError("bad rule")):
        assert isinstance(error, non_retryable_errors())
    # A DuckDB file that stays locked may free up: a plain WarehouseError keeps the retries.
    assert not isinstance(WarehouseError("cannot open"), non_retryable_errors())
