"""Partitioned contracts in real Airflow 3.2.2 (issue 35, ADR 0028).

The golden case ``partition-chain`` (an hourly producer on a cron, a daily consumer of it, a second
daily consumer) is compiled; its modules must import with no I/O, load in Airflow's DagBag, and
serialize (``DagSerialization``, as the scheduler reads them) to exactly the timetables the
manifest's ``schedule.partition`` says: ``CronPartitionTimetable`` (cron, UTC, ``run_offset``,
``key_format``) and ``PartitionedAssetTimetable`` (one mapper per upstream, class and formats).
The mapper table of ``compiler/support/partitions.ts`` is checked against the installed SDK and
core mappers: each mapper it names exists in ``airflow.sdk``, and the core mapper's
``to_downstream`` of an upstream key is the TypeScript key of the consumer's period.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import dagcheck
import pytest
from dagcheck import REPO_ROOT

CASE = dagcheck.PROJECT_CASES / "partition-chain"


@pytest.fixture(scope="module")
def partition_chain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("partition-chain")
    dagcheck.copy_project(CASE / "input", root, orchestration_sources=dagcheck.PROJECT_CASES / "_base" / "orchestration" / "airflow" / "sources")
    result = dagcheck.run_compile(root)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((root / "generated" / "manifest.json").read_text(encoding="utf-8"))
    return root, manifest


def test_partition_modules_import_without_io(partition_chain: tuple[Path, dict[str, Any]]) -> None:
    root, manifest = partition_chain
    modules = sorted((root / "generated" / "dags").rglob("*.py"))
    assert len(modules) == len(manifest["dags"]) == 3
    results, _ = dagcheck.import_without_io(modules, cwd=root)
    for path, result in results.items():
        assert result.get("io", []) == [] and result.get("error") is None, f"{path}: {result}"


def test_partition_timetables_serialize_as_the_manifest_says(partition_chain: tuple[Path, dict[str, Any]]) -> None:
    root, manifest = partition_chain
    dagbag = dagcheck.load_dagbag(root / "generated" / "dags")
    assert not dagbag.import_errors, dagcheck.format_import_errors(dagbag.import_errors)
    kinds = {}
    for mdag in manifest["dags"]:
        dag = dagbag.dags[mdag["dag_id"]]
        dagcheck.check_partition_schedule(dagcheck.serialized(dag).timetable, mdag["schedule"], mdag["dag_id"])
        kinds[mdag["dag_id"]] = mdag["schedule"]["partition"]["timetable"]
        assert mdag["runtime"]["partitioning"]["grain"] in ("hour", "day")
    assert kinds == {
        "web.events_hourly": "CronPartitionTimetable",
        "web.events_daily": "PartitionedAssetTimetable",
        "web.events_by_country": "PartitionedAssetTimetable",
    }
    daily = next(d for d in manifest["dags"] if d["dag_id"] == "web.events_daily")
    assert daily["schedule"]["partition"]["mappers"] == [
        {"asset": "web.events_hourly", "mapper": "StartOfDayMapper", "input_format": "%Y-%m-%dT%H", "output_format": "%Y-%m-%d"}
    ]
    # The serialized timetable is partitioned to the scheduler (it queues keyed events for it).
    assert dagcheck.serialized(dagbag.dags["web.events_daily"]).timetable.partitioned is True


def _ts_table() -> dict[str, Any]:
    node = shutil.which("node") or "node"
    script = (
        "const m = await import(process.argv[1]);"
        "const t = Date.UTC(2026, 11, 31, 22, 30);"
        "const out = {};"
        "for (const u of m.GRAINS) for (const c of m.GRAINS) {"
        " const k = m.partitionKey(u, t); const b = m.partitionBounds(u, k);"
        " out[u + '>' + c] = {mapper: m.mapperFor(u, c), upstreamKey: k, consumerKey: m.partitionKey(c, b.start)};"
        "}"
        "console.log(JSON.stringify({pairs: out, keyFormats: m.KEY_FORMATS, version: m.PARTITION_TABLE_AIRFLOW_VERSION}));"
    )
    module = REPO_ROOT / "dist" / "compiler" / "support" / "partitions.js"
    proc = subprocess.run([node, "--input-type=module", "-e", script, module.as_uri()], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def test_partition_mapper_table_matches_the_installed_sdk() -> None:
    import airflow.partition_mappers.identity as core_identity
    import airflow.partition_mappers.temporal as core_temporal
    import airflow.sdk as sdk
    from airflow import __version__

    table = _ts_table()
    assert table["version"] == __version__, "the mapper table was read from another Airflow than the pinned one"
    mapped = refused = 0
    for pair, row in table["pairs"].items():
        upstream, consumer = pair.split(">")
        mapper = row["mapper"]
        if isinstance(mapper, str):
            refused += 1
            assert mapper in ("coarser-upstream", "misaligned", "unparseable-key"), pair
            continue
        mapped += 1
        assert hasattr(sdk, mapper["mapper"]), f"{pair}: airflow.sdk has no {mapper['mapper']}"
        if mapper["mapper"] == "IdentityMapper":
            core = core_identity.IdentityMapper()
        else:
            core = getattr(core_temporal, mapper["mapper"])(timezone="UTC", input_format=mapper["input_format"], output_format=mapper["output_format"])
        assert core.to_downstream(row["upstreamKey"]) == row["consumerKey"], pair
    # 6 identities, hour/day/month/quarter into every coarser grain but week's, hour and day into week.
    assert (mapped, refused) == (6 + 4 + 3 + 2 + 1 + 2, 36 - 18)


def test_partition_cron_key_is_the_grain_key_of_the_previous_fire() -> None:
    """``CronPartitionTimetable(..., run_offset=-1, key_format=<grain>)`` keys the period just ended."""
    import pendulum
    from airflow.timetables.trigger import CronPartitionTimetable

    table = _ts_table()
    for grain, cron in (("hour", "5 * * * *"), ("day", "30 1 * * *"), ("month", "0 2 1 * *"), ("year", "0 0 1 1 *")):
        timetable = CronPartitionTimetable(cron, timezone="UTC", run_offset=-1, key_format=table["keyFormats"][grain])
        run_date = timetable._get_next(pendulum.datetime(2026, 12, 7, 11, 0, tz="UTC"))
        _, key = timetable._get_partition_info(run_date)
        previous = timetable._get_prev(run_date)
        expected = {
            "hour": previous.strftime("%Y-%m-%dT%H"),
            "day": previous.strftime("%Y-%m-%d"),
            "month": previous.strftime("%Y-%m"),
            "year": previous.strftime("%Y"),
        }[grain]
        assert key == expected, (grain, run_date, key)
