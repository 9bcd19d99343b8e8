"""Smoke tests for the Python environment built by scripts/python-env.sh."""

from __future__ import annotations

import os

import pytest


def test_airflow_is_3_2_and_uses_temp_home(airflow_home: str) -> None:
    """The locked Airflow is a 3.2.x release and reads the session's temp AIRFLOW_HOME."""
    import airflow

    assert airflow.__version__.startswith("3.2."), airflow.__version__
    assert os.environ["AIRFLOW_HOME"] == airflow_home
    assert os.path.expanduser("~/airflow") != airflow_home


def test_produce_operator_fails_loudly() -> None:
    """ProduceOperator fails at once (no retry) when its manifest cannot be read."""
    import datetime

    from airflow.sdk import BaseOperator
    from airflow.sdk.exceptions import AirflowFailException
    from contract_runtime.operators import ProduceOperator

    op = ProduceOperator(
        task_id="produce",
        contract_id="orders",
        manifest_path="manifests/orders.json",
    )
    assert isinstance(op, BaseOperator)
    assert op.contract_id == "orders"
    assert op.manifest_path == "manifests/orders.json"

    class TI:
        dag_id, run_id, task_id, try_number, max_tries, map_index = "orders", "manual__x", "produce", 1, 0, -1

    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    with pytest.raises(AirflowFailException, match="manifests/orders.json"):
        op.execute({"ti": TI(), "logical_date": now})
