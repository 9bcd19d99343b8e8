"""Write-audit-publish per partition (issue 35, ADR 0028), without Airflow, on DuckDB and on a real
PostgreSQL server (``servers.postgres_server``).

A partitioned contract (``runtime.partitioning``: the day of ``event_time``) reads a seeded source
table; its SQL selects the run's partition with ``{partition_start}``/``{partition_end}``. Asserted,
from the warehouse: each key publishes exactly its rows and leaves the others; a rerun of a key is
idempotent; a row outside the key's bounds blocks the audit (rule ``partition_bounds``) and every
published partition stays as it was; a run without a key, or with a key of another grain, fails
before anything is written, naming the contract and how to pass a key. The key's bounds agree with
the compiler's (``dist/compiler/support/partitions.js``) for every grain.
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import partitions, stages
from contract_runtime.sqlutil import TableRef, quote_ident
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse, open_warehouse
from dagcheck import REPO_ROOT
from runtime_support import dag_entry, run_identity, write_manifest
from servers import postgres_server

UTC = datetime.UTC
CONTRACT = "web.events"
TARGET = TableRef("web", "events")
PARTITIONED_SQL = (
    "select event_id, event_time, country from src.events "
    "where event_time >= {partition_start} and event_time < {partition_end}"
)
EVERY_ROW_SQL = "select event_id, event_time, country from src.events"
SEED = [
    ("e1", "2026-04-14 08:00:00", "de"),
    ("e2", "2026-04-14 23:59:59", "fr"),
    ("e3", "2026-04-15 00:00:00", "de"),
    ("e4", "2026-04-15 12:30:00", "it"),
    ("e5", "2026-04-16 01:00:00", "de"),
]


class _Hook:
    def __init__(self) -> None:
        self.module = types.ModuleType("contract_runtime.lineage")
        for name in ("emit_start", "emit_assertions", "emit_complete", "emit_fail"):
            setattr(self.module, name, lambda *a: None)
        self.module.duckdb_warehouse_namespace = lambda path: f"duckdb://{path}"  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _no_lineage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "contract_runtime.lineage", _Hook().module)


def _dag(sql: str) -> dict[str, Any]:
    dataset = {
        "name": "events",
        "asset": "web.events",
        "layer": "curated",
        "uri": "x-datalake://curated/web/events",
        "schema": {
            "version": 1,
            "properties": [
                {"name": "event_id", "logicalType": "string", "primaryKey": True, "required": True},
                {"name": "event_time", "logicalType": "timestamp", "required": True},
                {"name": "country", "logicalType": "string"},
            ],
        },
        "quality": [{"name": "event_id_not_null", "metric": "nullValues", "column": "event_id", "mustBe": 0, "severity": "error"}],
    }
    return dag_entry(
        CONTRACT,
        domain="web",
        producer={"type": "sql", "path": "sql/events.sql", "sql": sql},
        datasets=[dataset],
        partitioning={"column": "event_time", "grain": "day", "key_format": "%Y-%m-%d"},
    )


def _seed(wh: Warehouse) -> None:
    wh.execute("create schema if not exists src")
    wh.execute("drop table if exists src.events")
    wh.execute("create table src.events (event_id varchar, event_time timestamp, country varchar)")
    for row in SEED:
        wh.execute("insert into src.events values (?, cast(? as timestamp), ?)", list(row))


def _wap(root: Path, opener: Callable[[str | None], Warehouse], sql: str, key: str | None, run_id: str) -> Any:
    manifest = write_manifest(root / run_id, [_dag(sql)])
    run = run_identity(CONTRACT, run_id=run_id, partition_key=key)
    stages.produce(manifest, CONTRACT, run, opener=opener)
    summary = stages.audit(manifest, CONTRACT, run, opener=opener)
    return stages.publish(manifest, CONTRACT, run, summary, opener=opener)


def _published(wh: Warehouse) -> list[tuple[str, str]]:
    rows = wh.fetch(f"select event_id, cast(event_time as varchar) from {TARGET.sql} order by event_id")
    return [(str(r[0]), str(r[1])[:19]) for r in rows]


@pytest.fixture
def duck(tmp_path: Path) -> Iterator[tuple[Path, Callable[[str | None], Warehouse]]]:
    path = tmp_path / "w.duckdb"
    with DuckDBWarehouse(path) as wh:
        _seed(wh)
    yield tmp_path, lambda conn_id: DuckDBWarehouse(path)


@pytest.fixture(scope="module")
def pg_server() -> Iterator[dict[str, Any]]:
    with postgres_server() as server:
        yield server


@pytest.fixture
def pg(pg_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[Path, Callable[[str | None], Warehouse]]]:
    monkeypatch.setenv("AIRFLOW_CONN_CA_PG_PART", pg_server["uri"])
    wh = open_warehouse("ca_pg_part")
    for schema in ("web", "src", "_ca_staging", "_ca_state", "_ca_quarantine"):
        wh.execute(f"drop schema if exists {quote_ident(schema)} cascade")
    _seed(wh)
    wh.close()
    yield tmp_path, lambda conn_id: open_warehouse("ca_pg_part")


@pytest.fixture(params=["duckdb", "postgres"])
def warehouse(request: pytest.FixtureRequest) -> tuple[Path, Callable[[str | None], Warehouse]]:
    return request.getfixturevalue("duck" if request.param == "duckdb" else "pg")  # type: ignore[no-any-return]


def test_partition_publish_replaces_only_its_partition_and_reruns_idempotently(warehouse: tuple[Path, Any]) -> None:
    root, opener = warehouse
    first = _wap(root, opener, PARTITIONED_SQL, "2026-04-14", "manual__a")
    assert first[0]["row_count"] == 2
    assert first[0]["partition"] == {
        "key": "2026-04-14",
        "grain": "day",
        "column": "event_time",
        "start": "2026-04-14T00:00:00+00:00",
        "end": "2026-04-15T00:00:00+00:00",
    }
    _wap(root, opener, PARTITIONED_SQL, "2026-04-15", "manual__b")
    with opener(None) as wh:
        after_two = _published(wh)
    assert after_two == [("e1", "2026-04-14 08:00:00"), ("e2", "2026-04-14 23:59:59"), ("e3", "2026-04-15 00:00:00"), ("e4", "2026-04-15 12:30:00")]
    # the same key again, in a new run: the partition is replaced, not appended
    _wap(root, opener, PARTITIONED_SQL, "2026-04-15", "manual__c")
    with opener(None) as wh:
        assert _published(wh) == after_two


def test_partition_row_outside_the_bounds_blocks_and_leaves_other_partitions(warehouse: tuple[Path, Any]) -> None:
    root, opener = warehouse
    _wap(root, opener, PARTITIONED_SQL, "2026-04-14", "manual__a")
    with opener(None) as wh:
        before = _published(wh)
    with pytest.raises(stages.QualityGateFailed) as caught:
        _wap(root, opener, EVERY_ROW_SQL, "2026-04-16", "manual__bad")
    verdict = caught.value.summary["datasets"][0]
    # four rows outside 2026-04-16, two of them (e1, e2) with keys the published 2026-04-14 holds
    assert verdict["status"] == "blocked" and verdict["failed_errors"] == ["partition_bounds", "event_id_unique_published"]
    bounds = [r for r in verdict["results"] if r["name"] == "partition_bounds"]
    assert bounds == [{"name": "partition_bounds", "severity": "error", "success": False, "actual": 4, "expected": 0, "operator": "=="}]
    with opener(None) as wh:
        assert _published(wh) == before


def test_partition_primary_key_holds_across_published_partitions(warehouse: tuple[Path, Any]) -> None:
    root, opener = warehouse
    _wap(root, opener, PARTITIONED_SQL, "2026-04-14", "manual__a")
    # the same key again: its own partition's keys are replaced, not duplicates
    again = _wap(root, opener, PARTITIONED_SQL, "2026-04-14", "manual__a2")
    assert again[0]["row_count"] == 2
    with opener(None) as wh:
        before = _published(wh)
    # 2026-04-15 brings e3 and e4, and an e1 whose key the published 2026-04-14 partition holds
    clash = PARTITIONED_SQL + " union all select 'e1', cast('2026-04-15 06:00:00' as timestamp), 'de'"
    with pytest.raises(stages.QualityGateFailed) as caught:
        _wap(root, opener, clash, "2026-04-15", "manual__clash")
    verdict = caught.value.summary["datasets"][0]
    assert verdict["status"] == "blocked" and verdict["failed_errors"] == ["event_id_unique_published"]
    within = [r for r in verdict["results"] if r["name"] in ("event_id_unique", "event_id_unique_published")]
    assert [(r["name"], r["success"], r["actual"]) for r in within] == [
        ("event_id_unique", True, 0),
        ("event_id_unique_published", False, 1),
    ]
    with opener(None) as wh:
        assert _published(wh) == before
    # without the clashing row the partition publishes beside the other
    _wap(root, opener, PARTITIONED_SQL, "2026-04-15", "manual__b")
    with opener(None) as wh:
        assert [k for k, _ in _published(wh)] == ["e1", "e2", "e3", "e4"]


def test_partition_run_without_a_key_fails_saying_how_to_pass_one(duck: tuple[Path, Any]) -> None:
    root, opener = duck
    with pytest.raises(stages.NonRetryableError) as caught:
        _wap(root, opener, PARTITIONED_SQL, None, "manual__nokey")
    message = str(caught.value)
    assert message.startswith(f"{CONTRACT}: this DAG is partitioned by day of 'event_time'")
    assert "contract-assets backfill" in message and '"partition_key": "2026-12-07"' in message
    with opener(None) as wh:
        assert not wh.table_exists(TARGET)


def test_partition_key_of_another_grain_fails_naming_the_format(duck: tuple[Path, Any]) -> None:
    root, opener = duck
    with pytest.raises(stages.NonRetryableError, match=r"partition key '2026-04-14T05' is not a day key \(UTC, like '2026-12-07', strftime '%Y-%m-%d'\)"):
        _wap(root, opener, PARTITIONED_SQL, "2026-04-14T05", "manual__hourkey")


def test_partition_bounds_agree_with_the_compiler() -> None:
    node = shutil.which("node") or "node"
    script = (
        "const m = await import(process.argv[1]); const out = [];"
        "for (const g of m.GRAINS) for (let i = 0; i < 60; i++) {"
        " const t = Date.UTC(2024, 0, 1) + i * 9876543 * 1000 + i * 3600000;"
        " const k = m.partitionKey(g, t); const b = m.partitionBounds(g, k);"
        " out.push([g, k, new Date(b.start).toISOString(), new Date(b.end).toISOString()]); }"
        "console.log(JSON.stringify(out));"
    )
    module = REPO_ROOT / "dist" / "compiler" / "support" / "partitions.js"
    rows = json.loads(subprocess.run([node, "--input-type=module", "-e", script, module.as_uri()], capture_output=True, text=True, check=True).stdout)
    assert len(rows) == 360
    for grain, key, start, end in rows:
        found = partitions.bounds(grain, key)
        assert found is not None, (grain, key)
        assert (found[0].isoformat(), found[1].isoformat()) == (start.replace(".000Z", "+00:00"), end.replace(".000Z", "+00:00")), (grain, key)
    assert partitions.bounds("week", "2026-W54") is None and partitions.bounds("day", "2026-02-30") is None


def _request(tmp_path: Path, wh: Warehouse, dag: dict[str, Any], key: str | None) -> Any:
    from contract_runtime.producers import ProduceRequest

    manifest_path = write_manifest(tmp_path, [dag])
    run = run_identity(dag["dag_id"], run_id="scheduled__p", partition_key=key)
    staging = {d["name"]: TableRef("_ca_staging", f"s_{d['name']}") for d in dag["runtime"]["datasets"]}
    return ProduceRequest(
        manifest_path=manifest_path, manifest=json.loads(Path(manifest_path).read_text()), dag=dag, run=run, warehouse=wh, staging=staging
    )


def test_partition_python_command_and_dbt_producers_see_the_key_and_bounds(
    duck: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from contract_runtime.producers import dbt as dbt_producer
    from contract_runtime.producers.command import build_env
    from contract_runtime.producers.python import ProducerContext

    root, opener = duck
    dag = _dag(PARTITIONED_SQL)
    with opener(None) as wh:
        context = ProducerContext(_request(root, wh, dag, "2026-04-15"))
        assert context.partition is not None
        assert (context.partition.key, context.partition.start, context.partition.end) == (
            "2026-04-15",
            datetime.datetime(2026, 4, 15, tzinfo=UTC),
            datetime.datetime(2026, 4, 16, tzinfo=UTC),
        )
        env = build_env(_request(root, wh, dag, "2026-04-15"), base={})
        assert {k: v for k, v in env.items() if k.startswith("CONTRACT_ASSETS_PARTITION_")} == {
            "CONTRACT_ASSETS_PARTITION_KEY": "2026-04-15",
            "CONTRACT_ASSETS_PARTITION_START": "2026-04-15T00:00:00+00:00",
            "CONTRACT_ASSETS_PARTITION_END": "2026-04-16T00:00:00+00:00",
        }
        unpartitioned = {**dag, "runtime": {k: v for k, v in dag["runtime"].items() if k != "partitioning"}}
        assert ProducerContext(_request(root / "u", wh, unpartitioned, None)).partition is None
        assert not [k for k in build_env(_request(root / "u", wh, unpartitioned, None), base={}) if "PARTITION" in k]
    # dbt: every command of a partitioned run gets the three values as --vars
    assert dbt_producer.partition_vars(dag, "2026-04-15") == (
        "--vars",
        '{"partition_end": "2026-04-16 00:00:00", "partition_key": "2026-04-15", "partition_start": "2026-04-15 00:00:00"}',
    )
    assert dbt_producer.partition_vars(unpartitioned, None) == ()
    seen: list[tuple[str, ...]] = []
    monkeypatch.setattr(dbt_producer, "invoke", lambda command, select, **kw: seen.append(tuple(kw["extra_args"])))
    monkeypatch.setattr(dbt_producer, "lineage_parent", lambda *a: None)
    context_dbt = types.SimpleNamespace(project_dir=root, root=root, schema="s", project_manifest=root / "m.json", upstream_models={})
    dbt_producer.run_dbt({}, dag, run_identity(CONTRACT, partition_key="2026-04-15"), None, context_dbt, "test", ["m"], ("--x",))  # type: ignore[arg-type]
    assert seen == [("--x", *dbt_producer.partition_vars(dag, "2026-04-15"))]


def test_partition_placeholder_in_an_ingestion_source_reads_that_keys_objects(duck: tuple[Path, Any]) -> None:
    from contract_runtime.producers import ProducerError
    from contract_runtime.producers.load import source_objects, with_partition

    root, opener = duck
    (root / "data").mkdir()
    for key in ("2026-04-14", "2026-04-15"):
        (root / "data" / f"{key}.csv").write_text("event_id,event_time,country\n", encoding="utf-8")
    dag = _dag(PARTITIONED_SQL)
    dag["runtime"].update(
        kind="IngestionContract",
        mode="load",
        source={"name": "web.events_export", "uri": "s3://exports/events/{partition}/", "format": "csv", "system": "web"},
        sample_data="data/{partition}.csv",
        producer={"type": "load"},
    )
    with opener(None) as wh:
        request = _request(root, wh, dag, "2026-04-15")
        assert with_partition(request, "s3://exports/events/{partition}/") == "s3://exports/events/2026-04-15/"
        objects, _, listed = source_objects(request)
        assert [Path(o.uri).name for o in objects] == ["2026-04-15.csv"] and listed.endswith("/data/2026-04-15.csv")
        with pytest.raises(ProducerError, match=r"data/2026-04-16\.csv'? \(sample_data\) does not exist"):
            source_objects(_request(root, wh, dag, "2026-04-16"))
