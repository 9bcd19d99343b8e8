"""Helpers for test_generated_dags.py: compile projects, load DAGs, compare with the manifest.

Nothing here imports airflow at module import time; the functions that need it import
it when called, after conftest.py has set AIRFLOW_HOME.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
GENERATED_DIR = REPO_ROOT / "generated"
CLI = REPO_ROOT / "bin" / "contract-assets.js"
# Handed cases live beside the repository checkout, never at a fixed absolute path.
#: The project's golden cases; the handed field cases are kept there (no test needs ../shared).
PROJECT_CASES = REPO_ROOT / "test" / "cases"
IMPORT_WITHOUT_IO = Path(__file__).resolve().parent / "import_without_io.py"

TASK_ORDER = ("produce", "audit", "publish")
OPERATOR_CLASS = {"produce": "ProduceOperator", "audit": "AuditOperator", "publish": "PublishOperator"}


# --------------------------------------------------------------------------- subprocesses


def subprocess_env(**extra: str) -> dict[str, str]:
    """The test process environment (AIRFLOW_HOME from conftest included), no bytecode writes."""
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def node_executable() -> str:
    node = shutil.which("node")
    if node is None:
        raise AssertionError("node is not on PATH: the compiler CLI and the YAML reader need Node.js >= 20")
    return node


def read_yaml_via_node(path: Path) -> Any:
    """Parse a YAML file with the repo's own `yaml` package (YAML 1.2 core schema) and return it.

    PyYAML is installed in the venv but implements YAML 1.1 (e.g. `no` -> False, `0o7` and
    `1_000` differ), and ruamel.yaml is not installed, so the expected values are read the
    same way the compiler reads them: with the npm `yaml` package, printed as JSON.
    """
    script = (
        "const Y = require('yaml'); const fs = require('fs');"
        "process.stdout.write(JSON.stringify(Y.parse(fs.readFileSync(process.argv[1], 'utf8'))));"
    )
    proc = subprocess.run(
        [node_executable(), "-e", script, str(path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, f"node could not parse {path.name}:\n{proc.stderr}"
    return json.loads(proc.stdout)


@dataclass
class CompileResult:
    root: Path
    returncode: int
    stdout: str
    stderr: str

    @property
    def generated(self) -> Path:
        return self.root / "generated"

    @property
    def dags_dir(self) -> Path:
        return self.generated / "dags"

    def manifest(self) -> dict[str, Any]:
        return json.loads((self.generated / "manifest.json").read_text(encoding="utf-8"))

    def describe(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def copy_project(project_root: Path, dest: Path, orchestration_sources: Path | None = None) -> Path:
    """Copy a project's inputs (contracts/, sql/, dbt/, orchestration/airflow/sources/) into dest.

    orchestration_sources, when given, replaces the project's own
    orchestration/airflow/sources/ (the handed cases share one in ``_base``).
    """
    dest.mkdir(parents=True, exist_ok=True)
    for sub in ("contracts", "sql", "dbt"):
        if (project_root / sub).is_dir():
            shutil.copytree(project_root / sub, dest / sub)
    sources = orchestration_sources or project_root / "orchestration" / "airflow" / "sources"
    if sources.is_dir():
        shutil.copytree(sources, dest / "orchestration" / "airflow" / "sources")
    return dest


def run_compile(root: Path) -> CompileResult:
    """Run `node bin/contract-assets.js compile --root ROOT` (the built dist/ must exist)."""
    if not (REPO_ROOT / "dist" / "compiler" / "cli.js").is_file():
        raise AssertionError("dist/ is missing: run `npx tsc -p tsconfig.json` before the Python tests")
    proc = subprocess.run(
        [node_executable(), str(CLI), "compile", "--root", str(root)],
        cwd=root,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=300,
        check=False,
    )
    return CompileResult(root, proc.returncode, proc.stdout, proc.stderr)


def py_compile_under_c_locale(path: Path, pycache_prefix: Path) -> subprocess.CompletedProcess[str]:
    """`python -m py_compile PATH` with LANG=C LC_ALL=C; bytecode goes under pycache_prefix."""
    env = subprocess_env(LANG="C", LC_ALL="C", PYTHONPYCACHEPREFIX=str(pycache_prefix))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONUTF8", None)
    env.pop("PYTHONIOENCODING", None)
    return subprocess.run(
        [sys.executable, "-m", "py_compile", str(path)],
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
        check=False,
    )


def ruff_air(paths: Sequence[Path], *, preview: bool = False) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "ruff", "check", "--select", "AIR", "--isolated", "--no-cache"]
    cmd += ["--target-version", "py311"]
    if preview:
        cmd.append("--preview")
    cmd += [str(p) for p in paths]
    return subprocess.run(cmd, env=subprocess_env(), capture_output=True, text=True, timeout=120, check=False)


def import_without_io(
    modules: Sequence[Path], cwd: Path
) -> tuple[dict[str, dict[str, Any]], subprocess.CompletedProcess[str]]:
    """Run import_without_io.py over modules in one fresh interpreter; return its per-path results."""
    proc = subprocess.run(
        [sys.executable, str(IMPORT_WITHOUT_IO), *[str(m) for m in modules]],
        cwd=cwd,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and len(lines) == 1, (
        f"import_without_io.py failed (exit {proc.returncode})\n--- stdout\n{proc.stdout[-5000:]}"
        f"\n--- stderr\n{proc.stderr[-5000:]}"
    )
    return json.loads(lines[0][len("RESULT ") :]), proc


# --------------------------------------------------------------------------- DagBag


def load_dagbag(dags_dir: Path):
    """DagBag over dags_dir (safe_mode off, no examples), without writing __pycache__ there."""
    from airflow.dag_processing.dagbag import DagBag

    previous = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        return DagBag(dag_folder=str(dags_dir), include_examples=False, safe_mode=False)
    finally:
        sys.dont_write_bytecode = previous


def format_import_errors(errors: Mapping[str, str]) -> str:
    return "\n\n".join(f"=== {path}\n{trace}" for path, trace in sorted(errors.items()))


def serialized(dag):
    """The scheduler-side (core) view of an SDK DAG: timetables with as_expression(), summary."""
    from airflow.serialization.serialized_objects import DagSerialization

    return DagSerialization.from_dict(DagSerialization.to_dict(dag))


# --------------------------------------------------------------------------- conditions

# What Airflow 3.2.2 does with chained operators (checked in this env, and pinned by
# test_airflow_condition_flattening in test_generated_dags.py):
#
#   A & B & C      -> Python parses (A & B) & C; AssetAll.__and__ appends to the left
#                     AssetAll, so the result is flat: AssetAll(A, B, C), as_expression
#                     {"all": [A, B, C]}. The same holds for A | B | C -> {"any": [A, B, C]}
#                     and for longer chains (A & B & C & D is a flat 4-item all).
#   (A & B) & C    -> the same flat AssetAll(A, B, C): explicit brackets do not help, the
#                     left operand is already an AssetAll and gets extended.
#   A & (B & C)    -> NOT flattened: {"all": [A, {"all": [B, C]}]}.
#   (A & B) & (C & D) -> {"all": [A, B, {"all": [C, D]}]} (only the left side is merged).
#   AssetAll(AssetAll(A, B), C) built with the constructor -> stays nested.
#
# The compiler renders an n-ary node as one bracket, `(A & B & C)`, so a flat manifest node
# gives a flat Airflow node and compares exactly. A manifest tree with a same-operator node
# nested as the FIRST child ({"all": [{"all": [A, B]}, C]}) renders as `((A & B) & C)`, which
# Airflow flattens; nested elsewhere it stays nested. Both are the same condition (all/any
# are associative), so `normalise_condition` flattens every same-operator nesting and drops
# one-item groups (the compiler renders a one-item group as the bare item), and the suite
# compares normalise(expected) with normalise(actual). Only that flattening is normalised:
# order, operators, names, URIs and groups must match exactly.


def expected_expression(node: Mapping[str, Any], assets: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The as_expression() Airflow should give for a manifest ConditionNode."""
    if "asset" in node:
        asset = assets[node["asset"]]
        return {"asset": {"uri": airflow_uri(asset), "name": asset["name"], "group": asset["group"]}}
    (op,) = node.keys()
    assert op in ("all", "any"), f"unknown condition node {node!r}"
    return {op: [expected_expression(child, assets) for child in node[op]]}


def normalise_condition(expr: Mapping[str, Any]) -> dict[str, Any]:
    """Flatten same-operator nesting and collapse one-item all/any (see the comment above)."""
    if "asset" in expr:
        return dict(expr)
    (op,) = expr.keys()
    items: list[dict[str, Any]] = []
    for child in expr[op]:
        child = normalise_condition(child)
        if op in child:
            items.extend(child[op])
        else:
            items.append(child)
    if len(items) == 1:
        return items[0]
    return {op: items}


def condition_leaves(condition) -> list:
    """The SDK Asset leaves of an SDK asset condition, left to right."""
    if hasattr(condition, "objects"):
        return [leaf for child in condition.objects for leaf in condition_leaves(child)]
    return [condition]


# --------------------------------------------------------------------------- checks


def asset_fields(asset) -> dict[str, Any]:
    return {"name": asset.name, "uri": asset.uri, "group": asset.group, "extra": asset.extra}


def airflow_uri(asset: Mapping[str, Any]) -> str:
    """The URI Airflow stores for a manifest Asset: ``airflow_uri`` when the manifest says it differs."""
    return str(asset.get("airflow_uri", asset["uri"]))


def manifest_asset_fields(asset: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": asset["name"], "uri": airflow_uri(asset), "group": asset["group"], "extra": asset["extra"]}


def check_partition_schedule(timetable: Any, schedule: Mapping[str, Any], where: str) -> None:
    """The core (serialized and read back) partitioned timetable is the manifest's ``schedule.partition``:
    ``CronPartitionTimetable`` with its cron, UTC, run_offset and key_format, or
    ``PartitionedAssetTimetable`` with one mapper per asset, of the class and formats named."""
    from airflow.timetables.simple import PartitionedAssetTimetable
    from airflow.timetables.trigger import CronPartitionTimetable

    partition = schedule["partition"]
    if partition["timetable"] == "CronPartitionTimetable":
        assert type(timetable) is CronPartitionTimetable, f"{where}: Airflow has {type(timetable)!r}"
        got = timetable.serialize()
        want = {
            "expression": schedule["cron"]["expression"],
            "timezone": "UTC",
            "run_offset": partition["run_offset"],
            "key_format": partition["key_format"],
        }
        assert {k: got[k] for k in want} == want, f"{where}: Airflow serializes {got!r}"
        return
    assert type(timetable) is PartitionedAssetTimetable, f"{where}: Airflow has {type(timetable)!r}"
    got_mappers = {}
    for asset, mapper in timetable.partition_mapper_config.items():
        entry: dict[str, Any] = {"mapper": type(mapper).__name__}
        if entry["mapper"] != "IdentityMapper":
            entry["input_format"] = mapper.input_format
            entry["output_format"] = mapper.output_format
            assert str(mapper._timezone) == "UTC", f"{where}: the mapper of {asset.name} is in {mapper._timezone}"
        got_mappers[asset.name] = entry
    want_mappers = {m["asset"]: {k: v for k, v in m.items() if k != "asset"} for m in partition["mappers"]}
    assert got_mappers == want_mappers, f"{where}: Airflow's mappers {got_mappers!r}"


def check_schedule(dag, mdag: Mapping[str, Any], assets: Mapping[str, Mapping[str, Any]]) -> None:
    """The core timetable matches the manifest's schedule {assets, cron}."""
    from airflow.timetables.assets import AssetOrTimeSchedule
    from airflow.timetables.simple import AssetTriggeredTimetable, NullTimetable, PartitionedAssetTimetable
    from airflow.timetables.trigger import CronTriggerTimetable

    schedule = mdag["schedule"]
    timetable = serialized(dag).timetable
    cond, cron = schedule["assets"], schedule["cron"]
    where = f"DAG {mdag['dag_id']}: schedule {json.dumps(schedule)}"
    if "partition" in schedule:
        check_partition_schedule(timetable, schedule, where)
        if schedule["partition"]["timetable"] == "CronPartitionTimetable":
            return

    if cond is None and cron is None:
        assert type(timetable) is NullTimetable, f"{where}: expected NullTimetable, Airflow has {type(timetable)!r}"
        assert timetable.asset_condition.as_expression() is None, f"{where}: unexpected asset condition"
        return
    if cond is not None and cron is not None:
        expected_type = AssetOrTimeSchedule
    elif cond is not None:
        expected_type = PartitionedAssetTimetable if "partition" in schedule else AssetTriggeredTimetable
    else:
        expected_type = CronTriggerTimetable
    assert type(timetable) is expected_type, f"{where}: expected {expected_type!r}, Airflow has {type(timetable)!r}"

    if cron is not None:
        cron_tt = timetable.timetable if expected_type is AssetOrTimeSchedule else timetable
        assert type(cron_tt) is CronTriggerTimetable, f"{where}: cron part is {type(cron_tt)!r}"
        got = cron_tt.serialize()
        assert (got["expression"], got["timezone"]) == (cron["expression"], cron["timezone"]), (
            f"{where}: Airflow has expression {got['expression']!r}, timezone {got['timezone']!r}"
        )

    if cond is not None:
        actual = timetable.asset_condition.as_expression()
        expected = expected_expression(cond, assets)
        assert normalise_condition(actual) == normalise_condition(expected), (
            f"{where}:\n  Airflow as_expression(): {json.dumps(actual)}\n  expected from manifest:  {json.dumps(expected)}"
        )
        # extra is not part of as_expression(); check the Assets the schedule uses in full.
        for leaf in condition_leaves(dag.timetable.asset_condition):
            assert leaf.name in assets, f"{where}: schedule uses asset {leaf.name!r}, unknown to the manifest"
            assert asset_fields(leaf) == manifest_asset_fields(assets[leaf.name]), (
                f"{where}: schedule asset {leaf.name!r} differs from the manifest"
            )
    else:
        # Core timetables without assets carry a falsy _NullAsset whose as_expression() is None.
        assert not timetable.asset_condition and timetable.asset_condition.as_expression() is None, (
            f"{where}: unexpected asset condition {timetable.asset_condition.as_expression()!r}"
        )


def check_assets_and_tasks(
    dag, mdag: Mapping[str, Any], assets: Mapping[str, Mapping[str, Any]], manifest_path: Path
) -> None:
    """produce -> audit -> publish; inlets only on produce, outlets only on publish; Assets as in the manifest."""
    dag_id = mdag["dag_id"]
    assert list(dag.task_dict) == list(TASK_ORDER), f"DAG {dag_id}: tasks {list(dag.task_dict)}"
    produce, audit, publish = (dag.task_dict[t] for t in TASK_ORDER)
    assert produce.upstream_task_ids == set(), f"DAG {dag_id}: produce has upstreams {produce.upstream_task_ids}"
    assert audit.upstream_task_ids == {"produce"}, f"DAG {dag_id}: audit upstreams {audit.upstream_task_ids}"
    assert publish.upstream_task_ids == {"audit"}, f"DAG {dag_id}: publish upstreams {publish.upstream_task_ids}"
    assert publish.downstream_task_ids == set(), f"DAG {dag_id}: publish has downstreams {publish.downstream_task_ids}"

    for task in dag.tasks:
        assert type(task).__name__ == OPERATOR_CLASS[task.task_id], f"DAG {dag_id}: {task.task_id} is {type(task)!r}"
        assert type(task).__module__ == "contract_runtime.operators", (
            f"DAG {dag_id}: {task.task_id} from {type(task).__module__}"
        )
        assert task.contract_id == dag_id, f"DAG {dag_id}: task {task.task_id} has contract_id {task.contract_id!r}"
        assert os.path.samefile(task.manifest_path, manifest_path), (
            f"DAG {dag_id}: task {task.task_id} manifest_path {task.manifest_path!r} is not the manifest"
        )
        for kind in ("inlets", "outlets"):
            for asset in getattr(task, kind):
                assert type(asset).__name__ == "Asset", f"DAG {dag_id}: {task.task_id}.{kind} holds {asset!r}"
                assert asset.name in assets, (
                    f"DAG {dag_id}: {task.task_id}.{kind} uses {asset.name!r}, not in manifest assets[]"
                )
                assert asset_fields(asset) == manifest_asset_fields(assets[asset.name]), (
                    f"DAG {dag_id}: {task.task_id}.{kind} Asset {asset.name!r} differs from the manifest:\n"
                    f"  Airflow:  {asset_fields(asset)!r}\n  manifest: {manifest_asset_fields(assets[asset.name])!r}"
                )

    # Order is compared too: the manifest lists them in the order the compiler emits.
    assert [a.name for a in produce.inlets] == list(mdag["inlets"]), f"DAG {dag_id}: produce inlets"
    assert [a.name for a in publish.outlets] == list(mdag["outlets"]), f"DAG {dag_id}: publish outlets"
    assert produce.outlets == [] and audit.outlets == [], f"DAG {dag_id}: outlets on a task other than publish"
    assert audit.inlets == [] and publish.inlets == [], f"DAG {dag_id}: inlets on a task other than produce"

    # The manifest's own task list (when it has one) says the same.
    if "tasks" in mdag:
        got = [
            {
                "task_id": t.task_id,
                "inlets": [a.name for a in t.inlets],
                "outlets": [a.name for a in t.outlets],
                "upstream_task_ids": sorted(t.upstream_task_ids),
            }
            for t in dag.tasks
        ]
        want = [{**t, "upstream_task_ids": sorted(t["upstream_task_ids"])} for t in mdag["tasks"]]
        assert got == want, f"DAG {dag_id}: tasks differ from manifest dags[].tasks"


DEFAULT_ARG_KEYS = {
    # manifest key -> (default_args key, converter to the Python value)
    "owner": ("owner", str),
    "retries": ("retries", int),
    "retry_delay_seconds": ("retry_delay", lambda s: datetime.timedelta(seconds=s)),
    "execution_timeout_seconds": ("execution_timeout", lambda s: datetime.timedelta(seconds=s)),
    "pool": ("pool", str),
}


def check_dag_fields(dag, mdag: Mapping[str, Any]) -> None:
    """owner, description, tags and default_args as recorded in the manifest."""
    dag_id = mdag["dag_id"]
    assert dag.dag_id == dag_id
    assert dag.owner == mdag["owner"], f"DAG {dag_id}: dag.owner {dag.owner!r} != {mdag['owner']!r}"
    for task in dag.tasks:
        assert task.owner == mdag["owner"], f"DAG {dag_id}: task {task.task_id} owner {task.owner!r}"
    # The manifest records a contract without description as ""; the compiler then passes None.
    expected_description = mdag["description"] if mdag["description"] != "" else None
    assert dag.description == expected_description, (
        f"DAG {dag_id}: description {dag.description!r} != {expected_description!r}"
    )
    assert set(dag.tags) == set(mdag["tags"]), f"DAG {dag_id}: tags {sorted(dag.tags)} != {sorted(mdag['tags'])}"

    margs = mdag["default_args"]
    unknown = set(margs) - set(DEFAULT_ARG_KEYS)
    assert not unknown, f"DAG {dag_id}: manifest default_args has keys this suite does not know: {unknown}"
    expected = {DEFAULT_ARG_KEYS[k][0]: DEFAULT_ARG_KEYS[k][1](v) for k, v in margs.items()}
    assert dict(dag.default_args) == expected, f"DAG {dag_id}: default_args {dag.default_args!r} != {expected!r}"
    # What the tasks actually run with, after serialisation.
    for task in serialized(dag).tasks:
        for key in ("retries", "retry_delay", "execution_timeout", "pool", "owner"):
            if key in expected:
                assert getattr(task, key) == expected[key], (
                    f"DAG {dag_id}: serialized task {task.task_id}.{key} = {getattr(task, key)!r}, expected {expected[key]!r}"
                )


def is_ascii(data: bytes) -> bool:
    return all(b < 128 for b in data)


def non_ascii_report(path: Path) -> str:
    data = path.read_bytes()
    bad = [(i, b) for i, b in enumerate(data) if b >= 128][:10]
    return f"{path.name}: non-ASCII bytes at offsets {bad}"
