"""Time one DagBag fill of a DAG folder, in a fresh process (run by scripts/bench/run.mjs).

    .venv/bin/python scripts/bench/dagbag_fill.py DAG_FOLDER [--signatures] [--no-gc]

Airflow and the modules every variant needs (``airflow.sdk``, ``contract_runtime.operators``) are
imported first, and one throwaway DAG of the same shape is built (Airflow imports some modules on
the first DAG, Asset schedule and operator it sees); none of that is timed, so the figure is the
cost of the folder itself: reading, compiling or loading the bytecode, and executing every module
(for dag-factory: importing dag-factory and running its loader, which reads the YAML).
Prints one JSON line: fill seconds, DAG and task counts, import errors, the slowest files, and with
``--signatures`` one comparable description per DAG (taken after the timed part). ``--no-gc``
switches Python's cyclic garbage collector off during the fill, to see each module's own cost.
"""

from __future__ import annotations

import gc
import json
import sys
import time
import warnings


def asset_key(asset) -> list:
    return [asset.name, asset.uri, asset.group, json.dumps(asset.extra, sort_keys=True)]


def condition(node) -> object:
    """An SDK asset condition as a plain tree of asset names."""
    from airflow.sdk import Asset
    from airflow.sdk.definitions.asset import AssetAll, AssetAny

    if isinstance(node, Asset):
        return asset_key(node)
    if isinstance(node, AssetAll):
        return {"all": [condition(o) for o in node.objects]}
    if isinstance(node, AssetAny):
        return {"any": [condition(o) for o in node.objects]}
    return repr(node)


def schedule(dag) -> object:
    timetable = dag.timetable
    out: dict[str, object] = {"type": type(timetable).__name__}
    assets = getattr(timetable, "asset_condition", None)
    if assets is not None:
        out["assets"] = condition(assets)
    inner = getattr(timetable, "timetable", timetable)
    expression = getattr(inner, "_expression", None) or getattr(
        inner, "expression", None
    )
    if expression is not None:
        out["cron"] = [
            str(expression),
            str(getattr(inner, "_timezone", getattr(inner, "timezone", ""))),
        ]
    return out


def signature(dag) -> dict:
    args = dag.default_args or {}
    return {
        "schedule": schedule(dag),
        "default_args": {
            k: (v.total_seconds() if hasattr(v, "total_seconds") else v)
            for k, v in sorted(args.items())
            if k in ("owner", "retries", "pool", "retry_delay", "execution_timeout")
        },
        "catchup": bool(dag.catchup),
        "max_active_runs": dag.max_active_runs,
        "tasks": [
            {
                "id": t.task_id,
                "class": type(t).__name__,
                "downstream": sorted(t.downstream_task_ids),
                "inlets": sorted(asset_key(a) for a in t.inlets),
                "outlets": sorted(asset_key(a) for a in t.outlets),
            }
            for t in sorted(dag.tasks, key=lambda t: t.task_id)
        ],
    }


def warm_up() -> None:
    """Build one DAG like the measured ones, outside any DagBag, and drop it."""
    import datetime

    from airflow.sdk import DAG, Asset, AssetOrTimeSchedule, CronTriggerTimetable
    from contract_runtime.operators import (
        AuditOperator,
        ProduceOperator,
        PublishOperator,
    )

    a = Asset(
        name="bench.warm_a", uri="x-bench://warm/a", group="bench", extra={"k": 1}
    )
    b = Asset(name="bench.warm_b", uri="x-bench://warm/b", group="bench", extra={})
    c = Asset(name="bench.warm_c", uri="x-bench://warm/c", group="bench", extra={})
    schedule = AssetOrTimeSchedule(
        timetable=CronTriggerTimetable("0 2 * * *", timezone="UTC"),
        assets=((a | b) & c),
    )
    args = {
        "owner": "bench",
        "retries": 1,
        "retry_delay": datetime.timedelta(seconds=300),
    }
    with DAG(
        dag_id="bench_warm_up",
        schedule=schedule,
        tags=["bench"],
        default_args=args,
        catchup=False,
        max_active_runs=1,
    ):
        p = ProduceOperator(
            task_id="produce",
            contract_id="bench.warm",
            manifest_path="m",
            inlets=[a, b],
        )
        u = PublishOperator(
            task_id="publish", contract_id="bench.warm", manifest_path="m", outlets=[c]
        )
        (
            p
            >> AuditOperator(
                task_id="audit", contract_id="bench.warm", manifest_path="m"
            )
            >> u
        )


def main() -> None:
    folder = sys.argv[1]
    want_signatures = "--signatures" in sys.argv[2:]
    t_import = time.perf_counter()
    import airflow
    import airflow.sdk  # noqa: F401
    import contract_runtime.operators  # noqa: F401
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk import DAG, Asset, AssetOrTimeSchedule, CronTriggerTimetable  # noqa: F401

    warm_up()
    import_seconds = time.perf_counter() - t_import
    warnings.simplefilter("ignore")
    # Python's cyclic GC pauses land in whichever module happens to be loading: record them.
    pauses: list[tuple[int, float]] = []
    began = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            pauses.append((info["generation"], time.perf_counter() - began[0]))

    if "--no-gc" in sys.argv[2:]:
        gc.disable()
    gc.callbacks.append(on_gc)
    start = time.perf_counter()
    bag = DagBag(dag_folder=folder, include_examples=False, safe_mode=True)
    fill = time.perf_counter() - start
    gc.callbacks.remove(on_gc)
    stats = sorted(bag.dagbag_stats, key=lambda s: s.duration, reverse=True)
    result = {
        "fill_seconds": fill,
        "import_seconds": import_seconds,
        "dags": len(bag.dags),
        "files": len(stats),
        "tasks": sum(len(d.tasks) for d in bag.dags.values()),
        "import_errors": len(bag.import_errors),
        "first_import_error": next(iter(bag.import_errors.items()), None),
        "slowest": [
            {"file": s.file, "seconds": s.duration.total_seconds(), "dags": s.dag_num}
            for s in stats[:5]
        ],
        "median_file_seconds": stats[len(stats) // 2].duration.total_seconds()
        if stats
        else None,
        "p99_file_seconds": stats[len(stats) // 100].duration.total_seconds()
        if stats
        else None,
        "gc": {
            "enabled": "--no-gc" not in sys.argv[2:],
            "collections": len(pauses),
            "total_seconds": sum(p for _, p in pauses),
            "max_pause_seconds": max((p for _, p in pauses), default=0.0),
            "max_pause_generation": max(pauses, key=lambda p: p[1])[0]
            if pauses
            else None,
        },
    }
    if want_signatures:
        result["signatures"] = {
            dag_id: signature(dag) for dag_id, dag in sorted(bag.dags.items())
        }
    print("RESULT " + json.dumps(result, default=str))


if __name__ == "__main__":
    main()
