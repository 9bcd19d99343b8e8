"""The runIds: the DAG run's (equal to the Airflow OpenLineage provider's) and our contract
run's, nested under it (ADR 0010).

The provider (installed from the lock) derives a DAG run's id from the dag_id, the logical date
(``run_after`` when it is None, as for asset-triggered runs in Airflow 3) and the clear number.
``dag_run_id`` reuses the provider's function when the provider is loaded; otherwise it computes
the same value itself. Both paths are tested against the provider. ``contract_run_id`` is derived
from that id and the contract id: deterministic per DAG run, never the DAG run's own id.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from contract_runtime.lineage.runid import (
    contract_run_id,
    dag_run_id,
    fallback_dag_run_id,
    provider_namespace,
)
from lineage_testkit import make_run

PROVIDER_ADAPTER = "airflow.providers.openlineage.plugins.adapter"


def test_equals_the_providers_dag_run_id_for_an_asset_triggered_run() -> None:
    """No logical date: the provider keys on run_after; so do we."""
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter

    run = make_run("finance.contracts_curated")
    assert run.logical_date is None
    expected = OpenLineageAdapter.build_dag_run_id(
        dag_id="finance.contracts_curated", logical_date=run.run_after, clear_number=0
    )
    assert dag_run_id(run) == expected
    assert uuid.UUID(expected).version == 7


def test_equals_the_providers_dag_run_id_for_a_scheduled_run() -> None:
    """With a logical date the provider keys on it, not on run_after."""
    from airflow.providers.openlineage.utils.utils import build_dag_run_ol_run_id

    logical = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)
    run = make_run("billing.invoices_raw", logical_date=logical)
    assert dag_run_id(run) == build_dag_run_ol_run_id(
        dag_id="billing.invoices_raw", logical_date=logical, clear_number=0
    )
    assert dag_run_id(run) != dag_run_id(make_run("billing.invoices_raw"))


def test_same_id_for_every_task_try_and_map_index_of_the_run() -> None:
    """Every task and retry of one DAG run keys to one runId."""
    base = make_run("revrec.monthly")
    variants = [
        dataclasses.replace(
            base, task_id=task, try_number=tries, map_index=index, run_id=run_id
        )
        for task in ("produce", "audit", "publish")
        for tries in (1, 2, 3)
        for index in (-1, 0)
        for run_id in (base.run_id,)
    ]
    assert {dag_run_id(v) for v in variants} == {dag_run_id(base)}


def test_differs_between_dags_and_instants() -> None:
    """Different DAGs or different runs of a DAG get different ids."""
    a = make_run("revrec.monthly")
    assert dag_run_id(a) != dag_run_id(make_run("revrec.close_summary"))
    later = dataclasses.replace(a, run_after=a.run_after + timedelta(milliseconds=1))
    assert dag_run_id(a) != dag_run_id(later)


def test_clear_number_is_honoured_when_the_identity_carries_it() -> None:
    """A cleared DAG run is a new OpenLineage run for the provider; an identity with clear_number follows."""
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter

    run = dataclasses.replace(make_run("crm.contracts_raw"), clear_number=2)
    assert dag_run_id(run) == OpenLineageAdapter.build_dag_run_id(
        dag_id="crm.contracts_raw", logical_date=run.run_after, clear_number=2
    )
    assert dag_run_id(run) != dag_run_id(make_run("crm.contracts_raw"))


def test_provider_function_is_used_when_the_provider_is_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the provider loaded, the id comes from ``OpenLineageAdapter.build_dag_run_id``."""
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter

    calls: list[dict[str, object]] = []
    original = OpenLineageAdapter.build_dag_run_id

    def spy(**kwargs: object) -> str:
        calls.append(kwargs)
        return original(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(OpenLineageAdapter, "build_dag_run_id", staticmethod(spy))
    run = make_run("revrec.monthly")
    dag_run_id(run)
    assert calls == [
        {"dag_id": "revrec.monthly", "logical_date": run.run_after, "clear_number": 0}
    ]


def test_fallback_without_the_provider_gives_the_same_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the provider absent, the fallback computes the provider's value."""
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter

    cases = [
        make_run("finance.billings_by_contract"),
        make_run(
            "finance.billings_by_contract",
            logical_date=datetime(
                2026, 1, 31, 23, 0, tzinfo=timezone(timedelta(hours=1))
            ),
        ),
    ]
    provider = [
        OpenLineageAdapter.build_dag_run_id(
            dag_id=run.dag_id,
            logical_date=run.logical_date or run.run_after,
            clear_number=0,
        )
        for run in cases
    ]
    for name in (PROVIDER_ADAPTER, "airflow.providers.openlineage.conf"):
        monkeypatch.setitem(sys.modules, name, None)  # absent: ``import`` would raise
    with pytest.raises(ImportError):
        __import__(PROVIDER_ADAPTER)
    assert [dag_run_id(run) for run in cases] == provider


def test_fallback_formula_uses_the_provider_namespace() -> None:
    """The fallback with the provider's namespace equals the provider's function."""
    from airflow.providers.openlineage.utils.utils import build_dag_run_ol_run_id

    instant = datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)
    assert fallback_dag_run_id(
        "sales.customer_ltv", instant, 1, namespace=provider_namespace()
    ) == build_dag_run_ol_run_id(
        dag_id="sales.customer_ltv", logical_date=instant, clear_number=1
    )
    assert fallback_dag_run_id(
        "sales.customer_ltv", instant, 1, namespace="other"
    ) != build_dag_run_ol_run_id(
        dag_id="sales.customer_ltv", logical_date=instant, clear_number=1
    )


def test_cold_process_emits_start_fast_with_the_providers_run_id(
    tmp_path: Path,
) -> None:
    """A fresh interpreter without Airflow loaded: START is written well within the bound, the
    provider is not imported for the id, and the ids are derived from the provider's."""
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter

    events = tmp_path / "events.jsonl"
    code = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from lineage_testkit import dag_entry, load_manifest, make_run
from contract_runtime.lineage import emit_start
manifest = load_manifest()
started = time.perf_counter()
emit_start(manifest, dag_entry(manifest, "revrec.monthly"), make_run("revrec.monthly"))
print(json.dumps({
    "seconds": time.perf_counter() - started,
    "provider_loaded": "airflow.providers.openlineage.plugins.adapter" in sys.modules,
    "airflow_loaded": "airflow.configuration" in sys.modules,
}))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENLINEAGE")}
    env.update(
        OPENLINEAGE__TRANSPORT__TYPE="file",
        OPENLINEAGE__TRANSPORT__LOG_FILE_PATH=str(events),
        OPENLINEAGE__TRANSPORT__APPEND="true",
    )
    here = str(Path(__file__).resolve().parent)
    out = subprocess.run(
        [sys.executable, "-c", code, here],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=120,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["seconds"] < 1.0, report
    assert not report["provider_loaded"], report
    (line,) = events.read_text(encoding="utf-8").splitlines()
    run = make_run("revrec.monthly")
    provider_id = OpenLineageAdapter.build_dag_run_id(
        dag_id="revrec.monthly", logical_date=run.run_after, clear_number=0
    )
    event = json.loads(line)
    assert event["run"]["facets"]["parent"]["run"]["runId"] == provider_id
    assert event["run"]["runId"] == contract_run_id(run) != provider_id


def test_stand_in_run_identity_matches_the_runtimes() -> None:
    """The tests' stand-in has exactly the fields of ``contract_runtime.run.RunIdentity``."""
    from lineage_testkit import StandInRunIdentity

    run_module = pytest.importorskip("contract_runtime.run")
    fields = [f.name for f in dataclasses.fields(run_module.RunIdentity)]
    assert fields == [f.name for f in dataclasses.fields(StandInRunIdentity)]
    real = run_module.RunIdentity(**dataclasses.asdict(make_run("revrec.monthly")))
    stand_in = StandInRunIdentity(**dataclasses.asdict(make_run("revrec.monthly")))
    assert dag_run_id(real) == dag_run_id(stand_in)


def test_contract_run_id_is_derived_from_the_dag_run_and_the_contract() -> None:
    """Deterministic per DAG run (every task, try and map index), different from the DAG run's
    id, from other contracts' and other DAG runs', and equal to the documented formula."""
    from openlineage.client.uuid import generate_static_uuid

    base = make_run("revrec.monthly")
    variants = [
        base,
        make_run("revrec.monthly", "audit"),
        make_run("revrec.monthly", "publish", try_number=3),
        dataclasses.replace(base, map_index=2),
    ]
    assert {contract_run_id(v) for v in variants} == {contract_run_id(base)}
    assert contract_run_id(base) != dag_run_id(base)
    assert contract_run_id(base) != contract_run_id(base, "revrec.other")
    assert contract_run_id(base) != contract_run_id(dataclasses.replace(base, clear_number=1))
    assert contract_run_id(base) != contract_run_id(make_run("revrec.close_summary"))
    instant = base.run_after
    expected = generate_static_uuid(instant=instant, data=f"{dag_run_id(base)}.revrec.monthly".encode())
    assert contract_run_id(base) == str(expected)
    assert uuid.UUID(contract_run_id(base)).version == 7
