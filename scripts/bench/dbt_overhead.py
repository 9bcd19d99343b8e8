"""Per-model task overhead of the dbt producer against ``dbt build --select`` run directly
(run by scripts/bench/run.mjs).

    .venv/bin/python scripts/bench/dbt_overhead.py WORKDIR [--rounds 3] [--model invoices_curated]

In WORKDIR: a project root with a copy of the bundled dbt project and the compiled manifest, and
a DuckDB file holding the model's upstream tables (the bundled sample data's shape, small). Each
round, in alternating order, times (wall clock, fresh processes for dbt in both):

- direct: ``dbt build --select <model>`` with a profile on the same DuckDB file (what a user runs
  by hand: the model and its tests, in place);
- ours: the contract's ``produce``, ``audit`` and ``publish`` stages (``contract_runtime.stages``):
  profile and deferral state, ``dbt run`` into staging, ``dbt test`` there, the contract's own
  rules, the swap in one transaction.

Lineage is off in both (``OPENLINEAGE_DISABLED=true``). Prints one JSON line ``RESULT {...}``:
medians in seconds, the overhead (ours - direct) and the ratio; ``{"available": false, "reason"}``
when dbt is not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(f"usage: the work folder first, then the options\n{__doc__}")
    work = Path(sys.argv[1])
    args = sys.argv[2:]
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 3
    model = args[args.index("--model") + 1] if "--model" in args else "invoices_curated"
    dbt_bin = REPO / ".venv-dbt" / "bin"
    if not (dbt_bin / "dbt").exists():
        print("RESULT " + json.dumps({"available": False, "reason": f"no dbt at {dbt_bin} (scripts/python-env.sh)"}))
        return
    sys.path.insert(0, str(REPO / "test" / "python"))
    os.environ["OPENLINEAGE_DISABLED"] = "true"
    os.environ["CONTRACT_ASSETS_DBT_BIN"] = str(dbt_bin)
    os.environ["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "False"
    from contract_runtime import stages
    from contract_runtime.warehouse import DuckDBWarehouse
    from dbt_support import PROJECT, compiled_dag, seed_raw, write_manifest
    from runtime_support import run_identity

    root = work / "project"
    shutil.copytree(REPO / PROJECT, root / PROJECT, ignore=shutil.ignore_patterns("target", "logs"))
    contract_id = f"finance.{model}"
    dag = compiled_dag(contract_id)
    manifest = write_manifest(root, [dag])
    db = work / "warehouse.duckdb"
    with DuckDBWarehouse(db) as wh:
        seed_raw(wh)
    profiles = work / "profiles"
    profiles.mkdir()
    (profiles / "profiles.yml").write_text(
        f'contract_assets:\n  target: direct\n  outputs:\n    direct:\n      type: duckdb\n      path: "{db}"\n'
        "      schema: finance\n      threads: 1\n",
        encoding="utf-8",
    )

    def opener(conn_id: str | None) -> DuckDBWarehouse:
        return DuckDBWarehouse(db)

    def direct() -> float:
        start = time.perf_counter()
        proc = subprocess.run(
            [str(dbt_bin / "dbt"), "build", "--select", model, "--project-dir", str(root / PROJECT),
             "--profiles-dir", str(profiles), "--target-path", str(work / "direct-target"),
             "--log-path", str(work / "direct-logs"), "--no-version-check"],
            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
        )
        took = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"dbt build failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        return took

    def ours(i: int) -> float:
        run = run_identity(dag_id=contract_id, run_id=f"bench__{i}")
        start = time.perf_counter()
        stages.produce(manifest, contract_id, run, opener=opener)
        summary = stages.audit(manifest, contract_id, run, opener=opener)
        stages.publish(manifest, contract_id, run, summary, opener=opener)
        return time.perf_counter() - start

    direct_s: list[float] = []
    ours_s: list[float] = []
    for i in range(rounds):
        if i % 2 == 0:
            direct_s.append(direct())
            ours_s.append(ours(i))
        else:
            ours_s.append(ours(i))
            direct_s.append(direct())
    d, o = statistics.median(direct_s), statistics.median(ours_s)
    print("RESULT " + json.dumps({
        "available": True,
        "model": model,
        "rounds": rounds,
        "direct_s": [round(x, 3) for x in direct_s],
        "ours_s": [round(x, 3) for x in ours_s],
        "median_direct_s": round(d, 3),
        "median_ours_s": round(o, 3),
        "overhead_s": round(o - d, 3),
        "ratio": round(o / d, 3),
    }))


if __name__ == "__main__":
    main()
