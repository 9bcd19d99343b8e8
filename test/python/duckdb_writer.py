"""One worker of test_runtime_workers.py's two-writer test (a subprocess script, not a test module)::

    python duckdb_writer.py MANIFEST CONTRACT_ID RUNS READY_FILE GO_FILE WAITING_FILE

Imports the runtime and Airflow's SDK first (a task process has them loaded), writes READY_FILE,
waits for GO_FILE, then runs ``produce``, ``audit`` and ``publish`` of CONTRACT_ID for RUNS DAG
runs (run ids ``manual__2026-04-<day>``), each stage opening and closing the DuckDB file as a task
does. Every wait of :class:`contract_runtime.warehouse.DuckDBWarehouse` for another process's
lock is counted (its ``time.sleep``); the first one writes WAITING_FILE.

Prints one line ``RESULT <json>``: ``{"published": [row counts], "lock_waits": int, "error":
traceback | None}``.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
import traceback
import types

import airflow.sdk  # noqa: F401  (loaded in a task process before any stage runs)
from contract_runtime import stages, warehouse
from contract_runtime.manifest import load_manifest
from contract_runtime.run import RunIdentity


def main(manifest: str, contract_id: str, runs: int, ready: str, go: str, waiting: str) -> None:
    waits = 0

    def counted_sleep(seconds: float) -> None:
        nonlocal waits
        waits += 1
        if waits == 1:
            with open(waiting, "w") as f:
                f.write("waiting\n")
        time.sleep(seconds)

    warehouse.time = types.SimpleNamespace(monotonic=time.monotonic, sleep=counted_sleep)  # type: ignore[assignment]
    # what a task has done before it opens the warehouse, done before the start: the Task SDK's
    # configuration read, the manifest read and checked (cached per process)
    warehouse.configured_executors()
    load_manifest(manifest, contract_id)
    with open(ready, "w") as f:
        f.write("ready\n")
    while not os.path.exists(go):
        time.sleep(0.01)
    published: list[int] = []
    error = None
    try:
        for day in range(1, runs + 1):
            logical = datetime.datetime(2026, 4, day, tzinfo=datetime.UTC)
            run_id = f"manual__{logical.isoformat()}"
            identity = {"dag_id": contract_id, "run_id": run_id, "logical_date": logical, "run_after": logical,
                        "try_number": 1, "max_tries": 0, "map_index": -1}
            produced = stages.produce(manifest, contract_id, RunIdentity(task_id="produce", **identity))
            summary = stages.audit(manifest, contract_id, RunIdentity(task_id="audit", **identity), produced=produced)
            outputs = stages.publish(manifest, contract_id, RunIdentity(task_id="publish", **identity), summary)
            published.append(int(outputs[0]["row_count"]))
    except BaseException:  # noqa: BLE001 - report everything
        error = traceback.format_exc()
    sys.stdout.write("RESULT " + json.dumps({"published": published, "lock_waits": waits, "error": error}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6])
