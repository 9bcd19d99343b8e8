"""Added time per OpenLineage event of the emit hook, file transport (run by scripts/bench/run.mjs).

    .venv/bin/python scripts/bench/emit_overhead.py MANIFEST EVENTS_FILE [--events 240] [--warmup 12]

Calls emit_start / emit_assertions / emit_complete / emit_fail of ``contract_runtime.lineage`` in
turn for one DAG of the manifest (the one with the most quality rules), timing each call: first
with the client's file transport writing into EVENTS_FILE, then the same loop with
``OPENLINEAGE_DISABLED=true`` (the hook returns before building the event). The added time per
event is median(enabled) - median(disabled). Warm-up calls (client creation, lazy imports) are
timed separately. Prints one JSON line; ``{"available": false, "reason": ...}`` when the hook
cannot be imported.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import sys
import time
import types


def main() -> None:
    manifest_path, events_file = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    events = int(args[args.index("--events") + 1]) if "--events" in args else 240
    warmup = int(args[args.index("--warmup") + 1]) if "--warmup" in args else 12

    for key in [k for k in os.environ if k.startswith("OPENLINEAGE")]:
        del os.environ[key]
    os.environ["OPENLINEAGE__TRANSPORT__TYPE"] = "file"
    os.environ["OPENLINEAGE__TRANSPORT__LOG_FILE_PATH"] = events_file
    os.environ["OPENLINEAGE__TRANSPORT__APPEND"] = "true"

    try:
        from contract_runtime import lineage

        hooks = {
            name: getattr(lineage, name)
            for name in ("emit_start", "emit_assertions", "emit_complete", "emit_fail")
        }
    except Exception as error:  # noqa: BLE001 - the hook is not there (yet): report, never fail the bench
        print(
            "RESULT "
            + json.dumps(
                {"available": False, "reason": f"{type(error).__name__}: {error}"}
            )
        )
        return

    from contract_runtime.manifest import load_manifest

    # As a task reads it: each runtime dataset joined to its asset, its rules derived (ADR 0017f).
    manifest = load_manifest(manifest_path)
    dag = max(
        manifest["dags"],
        key=lambda d: sum(
            len(ds.get("quality", []))
            for ds in d.get("runtime", {}).get("datasets", [])
        ),
    )
    datasets = dag.get("runtime", {}).get("datasets", [])
    dataset = dict(datasets[0]) if datasets else {"asset": dag["outlets"][0]}
    dataset.setdefault(
        "table", "bench_schema." + str(dataset.get("asset", "t")).replace(".", "__")
    )
    results = [
        {
            "name": rule.get("name", f"rule_{i}"),
            "metric": rule.get("metric"),
            "column": rule.get("column"),
            "severity": rule.get("severity", "error"),
            "operator": "mustBe",
            "expected": 0,
            "actual": 0,
            "success": True,
            "type": rule.get("type", "library"),
        }
        for i, rule in enumerate(dataset.get("quality", []))
    ]
    outputs = [
        {
            "dataset": d.get("name", "d"),
            "asset": d.get("asset", dag["outlets"][0]),
            "table": "bench_schema." + str(d.get("asset", "t")).replace(".", "__"),
            "row_count": 1234,
            "columns": [
                {"name": p["name"], "type": p.get("logicalType")}
                for p in d.get("schema", {}).get("properties", [])
            ],
            "quality_status": "passed",
            "quarantined": False,
        }
        for d in datasets
    ]
    now = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    fields = {
        "dag_id": dag["dag_id"],
        "run_id": "bench__2026-01-02T03:04:05+00:00",
        "logical_date": now,
        "run_after": now,
        "try_number": 1,
        "max_tries": 2,
        "task_id": "produce",
        "map_index": -1,
    }
    try:
        from contract_runtime.run import RunIdentity

        run = RunIdentity(**fields)
    except Exception:  # noqa: BLE001 - any identity with these attributes will do
        run = types.SimpleNamespace(**fields)
    error = RuntimeError("bench: a task failed on purpose")

    calls = [
        lambda: hooks["emit_start"](manifest, dag, run),
        lambda: hooks["emit_assertions"](manifest, dag, run, dataset, results),
        lambda: hooks["emit_complete"](manifest, dag, run, outputs),
        lambda: hooks["emit_fail"](manifest, dag, run, error, "publish"),
    ]

    def loop(count: int) -> list[float]:
        times = []
        for i in range(count):
            start = time.perf_counter_ns()
            calls[i % len(calls)]()
            times.append((time.perf_counter_ns() - start) / 1e6)
        return times

    warm = loop(warmup)
    enabled = loop(events)
    os.environ["OPENLINEAGE_DISABLED"] = "true"
    loop(warmup)
    disabled = loop(events)
    del os.environ["OPENLINEAGE_DISABLED"]

    written = 0
    if os.path.exists(events_file):
        with open(events_file, encoding="utf-8") as f:
            written = sum(1 for line in f if line.strip())
    per_kind = {
        name: statistics.median(enabled[i :: len(calls)])
        for i, name in enumerate(("start", "assertions", "complete", "fail"))
    }
    quantile = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]
    print(
        "RESULT "
        + json.dumps(
            {
                "available": True,
                "dag_id": dag["dag_id"],
                "events": events,
                "events_written": written,
                "events_expected": warmup + events,
                "first_event_ms": warm[0],
                "median_enabled_ms": statistics.median(enabled),
                "median_disabled_ms": statistics.median(disabled),
                "added_ms": statistics.median(enabled) - statistics.median(disabled),
                "p95_enabled_ms": quantile(enabled, 0.95),
                "mean_enabled_ms": statistics.fmean(enabled),
                "median_by_event_ms": per_kind,
            }
        )
    )


if __name__ == "__main__":
    main()
