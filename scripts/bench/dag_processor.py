"""Parse times that a real ``airflow dag-processor`` reports for the same DAGs in two forms
(run by scripts/bench/run.mjs).

    .venv/bin/python scripts/bench/dag_processor.py WORKDIR --variant NAME=DAG_FOLDER ...
        [--files N] [--batches 1] [--loops 1] [--parsing-processes 2] [--timeout 900]

Each ``--variant`` is a DAG folder whose parent holds ``manifest.json`` (the layout the compiler
writes, ``generated/dags`` + ``generated/manifest.json``, and the hand-written peer's). The first
variant's ``.py`` files that exist under the same relative path in every variant are the measured
set; ``--files N`` takes N of them, spread evenly over the sorted paths, so a smaller run keeps the
mix of domains and schedules. Every variant gets a copy of exactly those files and of its manifest.

``airflow db migrate`` runs once into a template ``AIRFLOW_HOME`` (SQLite); each run gets a fresh
home with a copy of that DB, ``[core] dags_folder`` = the variant's copy, and starts ``airflow
dag-processor --num-runs LOOPS`` (``min_file_process_interval`` 0, so each loop parses every file
again). The copies are byte-compiled first (``compileall``: the ``__pycache__`` a long-running
processor has after its first loop), so one loop measures the steady state. The processor exits by
itself after its loops; the wait is bounded by ``--timeout`` and the process group is always
stopped (SIGTERM, then SIGKILL). ``--batches B`` splits the files into B interleaved slices and
runs generated, hand-written, hand-written, generated, ... one dag-processor per slice and variant,
so a change of load on the machine meets both variants.

The figure is the dag-processor's own: ``dag.last_parse_duration`` in the metadata DB, which
``DagFileProcessorManager`` sets from the same ``run_duration`` it keeps as the file's
``DagFileStat.last_duration`` (airflow/dag_processing/manager.py, ``process_parse_results`` and
``collection.py`` ``update_dags``), i.e. the last loop's wall time of the file's parsing process.
Prints one JSON line ``RESULT {...}``: per variant the DAG count, import errors, and the sum,
median, p95 and max of the per-file durations in seconds (over all batches), and each batch's.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from livestack import stop_process_group  # noqa: E402  (scripts/livestack.py)


def airflow_env(home: Path, dags: Path | None, parsing_processes: int = 2) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "0",
            # Keep [dag_processor] print_stats_interval on (its default): in 3.2.2 the stats table
            # is what enters every known file into the manager's _file_stats before its first
            # parse, and --num-runs counts only the files in there (with it off, the processor
            # exits after the first few files).
            "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": str(parsing_processes),
            "AIRFLOW__DAG_PROCESSOR__STALE_DAG_THRESHOLD": "3600",
            "OPENLINEAGE_DISABLED": "true",
            "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    if dags is not None:
        env["AIRFLOW__CORE__DAGS_FOLDER"] = str(dags)
    return env


def pick(variants: dict[str, Path], files: int | None) -> list[Path]:
    first = next(iter(variants.values()))
    rel = sorted(
        p.relative_to(first)
        for p in first.rglob("*.py")
        if "__pycache__" not in p.parts and all((d / p.relative_to(first)).is_file() for d in variants.values())
    )
    if files is None or files >= len(rel):
        return rel
    step = len(rel) / files
    return [rel[int(i * step)] for i in range(files)]


def copy_variant(src: Path, dest: Path, rel: list[Path]) -> Path:
    dags = dest / "dags"
    for r in rel:
        (dags / r).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / r, dags / r)
    shutil.copyfile(src.parent / "manifest.json", dest / "manifest.json")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dags)], check=True, stdin=subprocess.DEVNULL)
    return dags


def parse_once(home: Path, template_db: Path, dags: Path, loops: int, timeout: float, parsing_processes: int) -> dict[str, object]:
    home.mkdir(parents=True)
    shutil.copyfile(template_db, home / "airflow.db")
    log = home / "dag-processor.log"
    started = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(VENV_BIN / "airflow"), "dag-processor", "--num-runs", str(loops)],
            env=airflow_env(home, dags, parsing_processes),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            exit_code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            exit_code = None
        finally:
            stop_process_group(proc, grace=10)
    wall = time.monotonic() - started
    tail = log.read_text(encoding="utf-8", errors="replace")[-1500:]
    if exit_code != 0:
        raise SystemExit(
            f"airflow dag-processor {'did not finish within %.0f s' % timeout if exit_code is None else 'exited %s' % exit_code}:\n{tail}"
        )
    con = sqlite3.connect(home / "airflow.db")
    try:
        rows = con.execute("select dag_id, relative_fileloc, last_parse_duration from dag where not is_stale").fetchall()
        errors = con.execute("select filename, stacktrace from import_error").fetchall()
    finally:
        con.close()
    durations = sorted(float(d) for _, _, d in rows if d is not None)
    files = len({f for _, f, _ in rows})
    return {
        "dags": len(rows),
        "files_with_dags": files,
        "import_errors": len(errors),
        "first_import_error": [errors[0][0], errors[0][1][-800:]] if errors else None,
        "missing_durations": sum(1 for _, _, d in rows if d is None),
        "sum_s": sum(durations),
        "durations": durations,
        "process_wall_s": wall,
    }


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(f"usage: the work folder first, then the options\n{__doc__}")
    work = Path(sys.argv[1])
    args = sys.argv[2:]

    def opt(name: str, default: str | None) -> str | None:
        return args[args.index(name) + 1] if name in args else default

    variants = {
        spec.split("=", 1)[0]: Path(spec.split("=", 1)[1]).resolve()
        for i, spec in enumerate(args)
        if i > 0 and args[i - 1] == "--variant"
    }
    files = int(opt("--files", "0") or 0) or None
    loops = int(opt("--loops", "1") or 1)
    batches = max(1, int(opt("--batches", "1") or 1))
    timeout = float(opt("--timeout", "900") or 900)
    parsing_processes = int(opt("--parsing-processes", "2") or 2)
    if len(variants) < 2:
        raise SystemExit("usage: dag_processor.py WORKDIR --variant NAME=DAG_FOLDER --variant NAME=DAG_FOLDER ...")

    rel = pick(variants, files)
    # Batches interleave the variants in time, so a change of load on the machine meets both.
    slices = [rel[b::batches] for b in range(batches) if rel[b::batches]]

    template = work / "template-home"
    template.mkdir(parents=True)
    t0 = time.monotonic()
    migrate = subprocess.run(
        [str(VENV_BIN / "airflow"), "db", "migrate"],
        env=airflow_env(template, None),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if migrate.returncode != 0:
        raise SystemExit(f"airflow db migrate exited {migrate.returncode}:\n{migrate.stdout[-1500:]}{migrate.stderr[-1500:]}")
    migrate_s = time.monotonic() - t0

    runs: dict[str, list[dict[str, object]]] = {name: [] for name in variants}
    order = list(variants)
    for b, part in enumerate(slices):
        for name in order[b % len(order) :] + order[: b % len(order)]:
            dags = copy_variant(variants[name], work / "dags" / f"{name}-{b}", part)
            runs[name].append(parse_once(work / f"home-{name}-{b}", template / "airflow.db", dags, loops, timeout, parsing_processes))
    summary = {}
    for name, rs in runs.items():
        durations = sorted(d for r in rs for d in r.pop("durations"))  # type: ignore[attr-defined]
        summary[name] = {
            "dags": sum(int(r["dags"]) for r in rs),  # type: ignore[call-overload]
            "import_errors": sum(int(r["import_errors"]) for r in rs),  # type: ignore[call-overload]
            "first_import_error": next((r["first_import_error"] for r in rs if r["first_import_error"]), None),
            "missing_durations": sum(int(r["missing_durations"]) for r in rs),  # type: ignore[call-overload]
            "sum_s": sum(durations),
            "median_s": statistics.median(durations) if durations else None,
            "p95_s": durations[min(len(durations) - 1, int(0.95 * len(durations)))] if durations else None,
            "max_s": durations[-1] if durations else None,
            "batches": rs,
        }
    print(
        "RESULT "
        + json.dumps(
            {
                "files": len(rel),
                "batches": len(slices),
                "loops": loops,
                "parsing_processes": parsing_processes,
                "migrate_s": migrate_s,
                "variants": summary,
            }
        )
    )


if __name__ == "__main__":
    main()
