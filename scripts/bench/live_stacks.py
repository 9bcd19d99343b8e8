"""Live-stack figures (run by scripts/bench/run.mjs; issue 36 item 7): the CeleryExecutor stack
against the LocalExecutor stack, both started here, one after the other, on this machine.

    .venv/bin/python scripts/bench/live_stacks.py WORKDIR [--hops 20] [--skip-corpus]

Measured, all from Airflow's own timestamps (REST API):

- **Asset-hop latency**: a chain of ``hops + 1`` one-row SQL contracts (``bench.hop_00``, manual,
  then each asset-triggered by the one before), run once on each stack. A hop's latency is from
  the upstream's Asset event (``timestamp``) to the start of the consumer's first task
  (``produce``'s ``start_date``): the scheduler noticing the event, creating the run, queueing
  the task, and the executor starting it (on Celery: through the broker, on a worker). Median and
  p95 (nearest rank) over the hops.
- **The bundled corpus' wall time** (without its partitioned DAGs, which need a key): from the
  first root trigger to the last Asset event, on the LocalExecutor stack, and on the Celery stack
  with two workers and with one (``--concurrency 2`` each), each on a fresh stack.

Every stack is fresh and uses the PostgreSQL warehouse and lineage to a file; the hop chains run
on the machine's clock, the corpus on the fixed test clock (see :func:`stack_for`). Prints one
JSON line ``RESULT {...}``; ``{"available": false, "reason"}`` when a stack cannot start here.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

from livestack import TEST_CLOCK, LiveStack, StackUnavailable  # noqa: E402

CONFIG = """apiVersion: contract-assets/v1
kind: OrchestrationConfig
uri_template: "x-datalake://{layer}/{domain}/{name}"
lineage: {namespace: bench}
defaults: {retries: 0, retry_delay: PT1S, execution_timeout: PT10M, pool: default_pool, warehouse_conn_id: warehouse}
"""

HOP = """apiVersion: contract-assets/v1
kind: TransformContract
id: bench.{name}
version: 1.0.0
status: active
domain: bench
owner: team-bench
producer: {{type: sql, path: sql/bench/{name}.sql}}
{trigger}
datasets:
  - name: {name}
    schema: {{version: 1, properties: [{{name: id, logicalType: integer, required: true}}]}}
"""

TIMEOUT_S = 1800


def _time(value: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def hop_name(i: int) -> str:
    return f"hop_{i:02d}"


def write_hops(dest: Path, hops: int) -> dict[str, Any]:
    """The hop chain, compiled with the CLI into ``dest/generated``; returns its manifest."""
    (dest / "orchestration" / "airflow" / "sources").mkdir(parents=True)
    (dest / "orchestration" / "airflow" / "sources" / "config.yaml").write_text(CONFIG, encoding="utf-8")
    (dest / "contracts" / "bench").mkdir(parents=True)
    (dest / "sql" / "bench").mkdir(parents=True)
    for i in range(hops + 1):
        name = hop_name(i)
        trigger = "trigger: manual" if i == 0 else f"upstreams:\n  - {{asset: bench.{hop_name(i - 1)}}}"
        sql = "select 1 as id\n" if i == 0 else f"select id from bench.{hop_name(i - 1)}\n"
        (dest / "contracts" / "bench" / f"{name}.yaml").write_text(HOP.format(name=name, trigger=trigger), encoding="utf-8")
        (dest / "sql" / "bench" / f"{name}.sql").write_text(sql, encoding="utf-8")
    node = shutil.which("node") or "node"
    proc = subprocess.run(
        [node, str(REPO / "bin" / "contract-assets.js"), "compile", "--root", str(dest)],
        cwd=dest, capture_output=True, text=True, timeout=300, check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the hop chain does not compile:\n{proc.stdout}\n{proc.stderr}")
    return dict(json.loads((dest / "generated" / "manifest.json").read_text(encoding="utf-8")))


def p95(values: list[float]) -> float:
    """The nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def measure_hops(stack: LiveStack, hops: int) -> dict[str, Any]:
    """Run the chain once; each hop's latency in seconds (see the module doc)."""
    dag_ids = [f"bench.{hop_name(i)}" for i in range(hops + 1)]
    stack.wait_for_dags(dag_ids, timeout=600)
    for dag_id in dag_ids:
        stack.unpause(dag_id)
    stack.trigger(dag_ids[0])
    runs = {r["dag_id"]: r for r in stack.wait_until_quiescent(timeout=TIMEOUT_S) if r["dag_id"] in dag_ids}
    failed = sorted(d for d in dag_ids if runs.get(d, {}).get("state") != "success")
    if failed:
        raise SystemExit(f"hop chain: runs not successful: {failed}\n{stack.diagnose(list(runs.values()))}")
    events = {e["source_dag_id"]: _time(e["timestamp"]) for e in stack.asset_events() if e["source_dag_id"] in dag_ids}
    latencies: list[float] = []
    for upstream, consumer in zip(dag_ids, dag_ids[1:], strict=False):
        run = runs[consumer]
        first = min(_time(t["start_date"]) for t in stack.task_instances(consumer, run["dag_run_id"]) if t.get("start_date"))
        latencies.append((first - events[upstream]).total_seconds())
    for dag_id in dag_ids:
        stack.unpause(dag_id, paused=True)
    return {
        "hops": len(latencies),
        "median_s": round(statistics.median(latencies), 2),
        "p95_s": round(p95(latencies), 2),
        "min_s": round(min(latencies), 2),
        "max_s": round(max(latencies), 2),
        "latencies_s": [round(x, 2) for x in latencies],
    }


def _localrun() -> Any:
    spec = importlib.util.spec_from_file_location("localrun", REPO / "scripts" / "localrun.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_manifest() -> dict[str, Any]:
    """The bundled corpus without its partitioned DAGs (a run of theirs needs a key)."""
    manifest = json.loads((REPO / "generated" / "manifest.json").read_text(encoding="utf-8"))
    manifest["dags"] = [d for d in manifest["dags"] if not d["runtime"].get("partitioning")]
    return dict(manifest)


def run_corpus(stack: LiveStack, manifest: dict[str, Any]) -> dict[str, Any]:
    """Seed the external upstreams, unpause, trigger the roots (those reading a produced asset
    once the rest is quiet, as the live tests do), wait; the wall time and the runs' states."""
    dags = {d["dag_id"]: d for d in manifest["dags"]}
    stack.wait_for_dags(dags, timeout=600)
    roots = sorted(d for d, entry in dags.items() if entry["schedule"]["assets"] is None)
    produced = {a["name"] for a in manifest["assets"] if a.get("producer")}
    late = [d for d in roots if set(dags[d]["inlets"]) & produced]
    assert stack.postgres is not None
    _localrun().seed_external_sample_data_postgres(REPO, manifest, stack.postgres.uri("warehouse"))
    for dag_id in sorted(dags):
        stack.unpause(dag_id)
    started = stack.now()
    for d in roots:
        if d not in late:
            stack.trigger(d)
    stack.wait_until_quiescent(timeout=TIMEOUT_S)
    for d in late:
        stack.trigger(d)
    runs = [r for r in stack.wait_until_quiescent(timeout=TIMEOUT_S) if r["dag_id"] in dags]
    last = max(_time(e["timestamp"]) for e in stack.asset_events() if e["source_dag_id"] in dags)
    states: dict[str, int] = {}
    retried: list[dict[str, Any]] = []
    for r in runs:
        states[r["state"]] = states.get(r["state"], 0) + 1
        for ti in stack.task_instances(r["dag_id"], r["dag_run_id"]):
            if int(ti.get("try_number") or 1) > 1:
                # a retry waits the contract's retry_delay: the wall time is then not the corpus'
                retried.append({"dag_id": r["dag_id"], "task_id": ti["task_id"], "tries": ti["try_number"],
                                "first_try": _first_try_tail(stack, r["dag_id"], r["dag_run_id"], str(ti["task_id"]))})
    return {"wall_s": round((last - started).total_seconds(), 1), "dag_runs": len(runs), "states": states, "retried": retried}


def _first_try_tail(stack: LiveStack, dag_id: str, run_id: str, task_id: str, lines: int = 12) -> str:
    """The last lines of a task's first try's log, wherever the executor wrote it."""
    try:
        if stack.executor == "celery":
            text = "\n".join(stack.worker_log(n, dag_id, run_id, task_id, 1) for n in range(1, stack.workers + 1))
        else:
            text = stack.task_log(dag_id, run_id, task_id, 1)
    except Exception as exc:  # noqa: BLE001 - a figure's annotation must not fail the bench
        return f"(unreadable: {exc})"
    return "\n".join(text.strip().splitlines()[-lines:])


def stack_for(work: Path, executor: str, workers: int, *, fixed_clock: bool) -> LiveStack:
    """A stack of ``executor`` (``local`` or ``celery`` with ``workers``). With ``fixed_clock``
    the test clock (no cron of the corpus fires); without it the machine's own clock, which every
    process reads alike: nothing shifted stands between the timestamps a hop compares (before
    ``livestack_clock`` read its clock at start, two processes' timestamps disagreed by up to
    half a second there, as much as a hop takes)."""
    options: dict[str, Any] = {"executor": executor}
    if executor == "celery":
        options.update(workers=workers, dags_folder_bundle=False, git_bundle=work / "git-bundle")
    return LiveStack(work=work, clock=TEST_CLOCK if fixed_clock else None, inherit_lineage_config=False, **options)


def on_stack(work: Path, label: str, executor: str, workers: int, fixed_clock: bool, result: dict[str, Any], body: Any) -> bool:
    """Start a fresh stack, run ``body(stack)``, stop it; False when a stack cannot start here."""
    folder = Path(tempfile.mkdtemp(prefix=f"ca-bench-{label}-", dir=work))
    folder.chmod(0o755)
    stack = stack_for(folder, executor, workers, fixed_clock=fixed_clock)
    started = time.monotonic()
    try:
        try:
            stack.start()
        except StackUnavailable as exc:
            result.update(available=False, reason=str(exc))
            return False
        result.setdefault("stack_start_s", {}).setdefault(label, []).append(round(time.monotonic() - started, 1))
        body(stack)
    finally:
        stack.stop()
    return True


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(f"usage: the work folder first, then the options\n{__doc__}")
    work = Path(sys.argv[1])
    args = sys.argv[2:]
    hops = int(args[args.index("--hops") + 1]) if "--hops" in args else 20
    corpus = "--skip-corpus" not in args
    work.mkdir(parents=True, exist_ok=True)
    hop_project = work / "hops"
    write_hops(hop_project, hops)
    manifest = corpus_manifest()
    result: dict[str, Any] = {"available": True, "hop_latency": {}, "corpus": {}}
    stacks = [("local", "local", 1), ("celery_2", "celery", 2)]

    def hops_on(label: str, executor: str) -> Any:
        def body(stack: LiveStack) -> None:
            if executor == "celery":
                stack.commit_project(hop_project, "the hop chain")
            else:
                stack.add_project("hops", hop_project)
            result["hop_latency"][label] = measure_hops(stack, hops)
            print(f"live: {label} hops {result['hop_latency'][label]}", file=sys.stderr)
        return body

    def corpus_on(label: str, executor: str) -> Any:
        def body(stack: LiveStack) -> None:
            if executor == "celery":
                stack.commit_project(REPO, "the bundled corpus")
            result["corpus"][label] = run_corpus(stack, manifest)
            print(f"live: {label} corpus {result['corpus'][label]}", file=sys.stderr)
        return body

    for label, executor, workers in stacks:
        if not on_stack(work, label, executor, workers, False, result, hops_on(label, executor)):
            print("RESULT " + json.dumps(result))
            return
    if corpus:
        for label, executor, workers in [*stacks, ("celery_1", "celery", 1)]:
            on_stack(work, label, executor, workers, True, result, corpus_on(label, executor))
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
