"""The generated DAG modules, loaded in real Airflow 3.2, checked against generated/manifest.json.

Part 1 uses the committed ``generated/`` at the repo root as is (CI compiles it first).
Part 2 compiles the handed field cases, kept as golden cases (``test/cases/<name>/input``), with
the CLI into a temporary copy of each project and checks what comes out; it needs nothing beside
the repository.

Helpers live in dagcheck.py; import_without_io.py is the subprocess script for the
"no I/O at import" check. What Airflow does with ``A & B & C`` is written down in
dagcheck.py (above ``expected_expression``) and pinned by test_airflow_condition_flattening.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import dagcheck
import pytest
from dagcheck import GENERATED_DIR

MANIFEST_FILE = GENERATED_DIR / "manifest.json"
DAGS_DIR = GENERATED_DIR / "dags"


def _read_manifest() -> dict[str, Any] | None:
    try:
        return json.loads(MANIFEST_FILE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


# Read at collection time only to name the parametrised tests; the fixtures re-read it.
_MANIFEST = _read_manifest()
DAG_IDS = [d["dag_id"] for d in _MANIFEST["dags"]] if _MANIFEST else []
MODULES = sorted(DAGS_DIR.rglob("*.py")) if DAGS_DIR.is_dir() else []
MODULE_IDS = [m.relative_to(DAGS_DIR).as_posix() for m in MODULES]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def manifest() -> dict[str, Any]:
    data = _read_manifest()
    assert data is not None, "generated/manifest.json is missing: run `node bin/contract-assets.js compile` first"
    return data


@pytest.fixture(scope="session")
def manifest_assets(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    names = [a["name"] for a in manifest["assets"]]
    assert len(names) == len(set(names)), "manifest assets[] has duplicate names"
    return {a["name"]: a for a in manifest["assets"]}


@pytest.fixture(scope="session")
def manifest_dags(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["dag_id"]: d for d in manifest["dags"]}


@pytest.fixture(scope="session")
def dagbag():
    return dagcheck.load_dagbag(DAGS_DIR)


@pytest.fixture(scope="session")
def loaded_dags(dagbag, manifest_dags):
    """dag_id -> SDK DAG; fails (once per test using it) if the bag has import errors."""
    assert not dagbag.import_errors, "DagBag import errors:\n" + dagcheck.format_import_errors(dagbag.import_errors)
    return dagbag.dags


@pytest.fixture(scope="session")
def no_io_results(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """import_without_io.py over every generated module, in one fresh interpreter."""
    results, _ = dagcheck.import_without_io(MODULES, cwd=tmp_path_factory.mktemp("no-io-cwd"))
    return results


@pytest.fixture(scope="session")
def cases_dir() -> Path:
    """The project's golden cases (``test/cases``), where the handed field cases are kept as tests."""
    return dagcheck.PROJECT_CASES


@pytest.fixture(scope="session")
def compile_case(cases_dir: Path, tmp_path_factory):
    """compile_case(name, edit=None) -> CompileResult, cached per (name, edit key).

    Copies <cases>/<name>/{contracts,sql} and <cases>/_base/orchestration/airflow/sources
    into a fresh temp root and runs `node bin/contract-assets.js compile --root <tmp>`.
    `edit` is an optional (key, function(root)) applied to the copy before compiling.
    """
    cache: dict[tuple[str, str | None], dagcheck.CompileResult] = {}

    def run(name: str, edit: tuple[str, Any] | None = None) -> dagcheck.CompileResult:
        key = (name, edit[0] if edit else None)
        if key not in cache:
            case = cases_dir / name / "input"
            assert case.is_dir(), f"golden case {name!r} is missing under test/cases"
            base_sources = cases_dir / "_base" / "orchestration" / "airflow" / "sources"
            assert base_sources.is_dir(), "test/cases/_base/orchestration/airflow/sources is missing"
            root = tmp_path_factory.mktemp(re.sub(r"[^A-Za-z0-9]+", "-", "-".join(filter(None, key))))
            dagcheck.copy_project(case, root, orchestration_sources=base_sources)
            if edit:
                edit[1](root)
            cache[key] = dagcheck.run_compile(root)
        return cache[key]

    return run


# --------------------------------------------------------------------------- generated/: loading


def test_generated_tree_present(manifest: dict[str, Any]) -> None:
    assert MODULES, "generated/dags has no modules"
    assert manifest["dags"], "manifest has no dags[]"


def test_dagbag_has_no_import_errors(dagbag) -> None:
    assert not dagbag.import_errors, "DagBag import errors:\n" + dagcheck.format_import_errors(dagbag.import_errors)


def test_dag_ids_equal_manifest(dagbag, manifest: dict[str, Any]) -> None:
    manifest_ids = [d["dag_id"] for d in manifest["dags"]]
    assert len(manifest_ids) == len(set(manifest_ids)), "manifest dags[] has duplicate dag_ids"
    # The project's freshness monitor is the one generated DAG that serves no contract.
    monitor = manifest.get("freshness_monitor")
    assert monitor is not None, "the bundled corpus has freshness policies, so a monitor"
    assert set(dagbag.dag_ids) == {*manifest_ids, monitor["dag_id"]}


def test_freshness_monitor_matches_manifest(dagbag, manifest: dict[str, Any]) -> None:
    monitor = manifest["freshness_monitor"]
    dag = dagbag.dags[monitor["dag_id"]]
    (task,) = dag.tasks
    assert sorted(a.name for a in task.inlets) == [a["name"] for a in monitor["assets"]]
    assert task.outlets == []
    assets = {a["name"]: a for a in manifest["assets"]}
    dagcheck.check_schedule(dag, {"dag_id": monitor["dag_id"], "schedule": {"assets": None, **monitor["schedule"]}}, assets)


def test_deadlines_match_manifest(dagbag, manifest: dict[str, Any]) -> None:
    """freshness.expected_runtime is an Airflow DeadlineAlert with the notifier as its callback."""
    from airflow.sdk import AsyncCallback, DeadlineReference

    with_deadline = [d for d in manifest["dags"] if d.get("deadline")]
    assert with_deadline, "the bundled corpus declares an expected_runtime"
    references = {"queued_at": DeadlineReference.DAGRUN_QUEUED_AT, "logical_date": DeadlineReference.DAGRUN_LOGICAL_DATE}
    for mdag in manifest["dags"]:
        alerts = dagbag.dags[mdag["dag_id"]].deadline
        if not mdag.get("deadline"):
            assert not alerts, mdag["dag_id"]
            continue
        (alert,) = alerts
        expected = mdag["deadline"]
        assert alert.reference == references[expected["reference"]]
        assert alert.interval.total_seconds() == expected["interval_seconds"]
        assert isinstance(alert.callback, AsyncCallback)
        assert (alert.callback.path, alert.callback.kwargs) == (expected["notifier"]["class"], expected["notifier"]["kwargs"])


def test_each_module_defines_exactly_one_dag(dagbag) -> None:
    per_file = {stat.file: stat.dag_num for stat in dagbag.dagbag_stats}
    assert len(per_file) == len(MODULES), f"DagBag read {sorted(per_file)}, generated/dags has {MODULE_IDS}"
    assert all(n == 1 for n in per_file.values()), f"DAGs per file: {per_file}"


# --------------------------------------------------------------------------- generated/: per DAG


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_schedule_matches_manifest(dag_id: str, loaded_dags, manifest_dags, manifest_assets) -> None:
    dagcheck.check_schedule(loaded_dags[dag_id], manifest_dags[dag_id], manifest_assets)


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_tasks_inlets_outlets_match_manifest(dag_id: str, loaded_dags, manifest_dags, manifest_assets) -> None:
    dagcheck.check_assets_and_tasks(loaded_dags[dag_id], manifest_dags[dag_id], manifest_assets, MANIFEST_FILE)


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_dag_fields_match_manifest(dag_id: str, loaded_dags, manifest_dags) -> None:
    dagcheck.check_dag_fields(loaded_dags[dag_id], manifest_dags[dag_id])


# --------------------------------------------------------------------------- generated/: per file


@pytest.mark.parametrize("module", MODULES, ids=MODULE_IDS)
def test_module_is_pure_ascii(module: Path) -> None:
    assert dagcheck.is_ascii(module.read_bytes()), dagcheck.non_ascii_report(module)


@pytest.mark.parametrize("module", MODULES, ids=MODULE_IDS)
def test_module_py_compiles_under_c_locale(module: Path, tmp_path: Path) -> None:
    proc = dagcheck.py_compile_under_c_locale(module, tmp_path / "pycache")
    assert proc.returncode == 0, f"py_compile failed under LANG=C:\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("preview", [False, True], ids=["stable", "preview"])
def test_ruff_air_rules_pass(preview: bool) -> None:
    proc = dagcheck.ruff_air([GENERATED_DIR], preview=preview)
    assert proc.returncode == 0, f"ruff check --select AIR failed:\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("module", MODULES, ids=MODULE_IDS)
def test_import_does_no_io(module: Path, no_io_results: dict[str, dict[str, Any]]) -> None:
    result = no_io_results[str(module)]
    assert result["ok"], f"I/O at import: blocked {result['blocked']}\n{result['error']}"
    assert result["dag_id"] is not None, "the module ran but left no module-level `dag`"


def test_import_guard_catches_io(tmp_path: Path) -> None:
    """The no-I/O harness is not vacuous: modules that open, list or spawn are reported."""
    offenders = {
        "opens.py": "open(__file__).read()\n",
        "lists.py": "import os\nos.listdir('.')\n",
        "scans.py": "import os\nlist(os.scandir('.'))\n",
        "swallows.py": "try:\n    open('x')\nexcept Exception:\n    pass\n",
        "spawns.py": "import os\nos.system('true')\n",
        "clean.py": "import airflow.sdk\nX = 1\n",
    }
    for name, body in offenders.items():
        (tmp_path / name).write_text(body, encoding="ascii")
    results, _ = dagcheck.import_without_io([tmp_path / n for n in offenders], cwd=tmp_path)
    got = {Path(p).name: r["ok"] for p, r in results.items()}
    assert got == {n: n == "clean.py" for n in offenders}, results


def test_airflow_condition_flattening() -> None:
    """Pins what Airflow 3.2 does with chained & and | (see the comment in dagcheck.py)."""
    from airflow.sdk import DAG, Asset

    a, b, c, d = (Asset(name=n, uri=f"x-test://{n}") for n in "abcd")

    def expr(schedule) -> dict:
        with DAG(dag_id="flattening_probe", schedule=schedule) as dag:
            pass
        return dagcheck.serialized(dag).timetable.asset_condition.as_expression()

    def leaf(n: str) -> dict:
        return {"asset": {"uri": f"x-test://{n}", "name": n, "group": "asset"}}

    assert expr(a & b & c) == {"all": [leaf("a"), leaf("b"), leaf("c")]}
    assert expr((a & b) & c) == {"all": [leaf("a"), leaf("b"), leaf("c")]}
    assert expr(a & (b & c)) == {"all": [leaf("a"), {"all": [leaf("b"), leaf("c")]}]}
    assert expr(a | b | c) == {"any": [leaf("a"), leaf("b"), leaf("c")]}
    assert expr((a & b) & (c & d)) == {"all": [leaf("a"), leaf("b"), {"all": [leaf("c"), leaf("d")]}]}
    assert expr((a | b) & c) == {"all": [{"any": [leaf("a"), leaf("b")]}, leaf("c")]}
    # normalise_condition makes all of these shapes comparable, and only them.
    assert dagcheck.normalise_condition(expr(a & (b & c))) == expr(a & b & c)
    assert dagcheck.normalise_condition(expr((a | b) & c)) == expr((a | b) & c)


# --------------------------------------------------------------------------- handed cases


def _check_compiled_project(result: dagcheck.CompileResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """Generic checks on a compiled temp project; returns (manifest, dagbag.dags)."""
    assert result.returncode == 0, result.describe()
    modules = sorted(result.dags_dir.rglob("*.py"))
    assert modules, f"no modules generated\n{result.describe()}"
    for module in modules:
        assert dagcheck.is_ascii(module.read_bytes()), dagcheck.non_ascii_report(module)
        proc = dagcheck.py_compile_under_c_locale(module, result.root / ".pycache-prefix")
        assert proc.returncode == 0, f"py_compile under LANG=C failed for {module.name}:\n{proc.stderr}"
    ruff = dagcheck.ruff_air([result.generated])
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr

    manifest = result.manifest()
    bag = dagcheck.load_dagbag(result.dags_dir)
    assert not bag.import_errors, dagcheck.format_import_errors(bag.import_errors)
    assert set(bag.dag_ids) == {d["dag_id"] for d in manifest["dags"]}
    assets = {a["name"]: a for a in manifest["assets"]}
    for mdag in manifest["dags"]:
        dag = bag.dags[mdag["dag_id"]]
        dagcheck.check_schedule(dag, mdag, assets)
        dagcheck.check_assets_and_tasks(dag, mdag, assets, result.generated / "manifest.json")
        dagcheck.check_dag_fields(dag, mdag)
    return manifest, bag.dags


def test_case_injection(compile_case, cases_dir: Path) -> None:
    """Hostile free text: exit 0, ASCII module, py_compile under LANG=C, values exact in Airflow."""
    result = compile_case("injection")
    _, dags = _check_compiled_project(result)

    contract = dagcheck.read_yaml_via_node(cases_dir / "injection" / "input" / "contracts" / "sales" / "orders_clean.yaml")
    dag = dags[contract["id"]]
    assert dag.description == contract["description"]
    assert dag.tags == set(contract["tags"])
    assert dag.owner == contract["owner"]
    assert dag.default_args["owner"] == contract["owner"]
    assert all(t.owner == contract["owner"] for t in dag.tasks)

    (dataset,) = contract["datasets"]
    (asset,) = dag.task_dict["publish"].outlets
    assert asset.name == f"{contract['domain']}.{dataset['name']}"
    yaml_extra = dataset["extra"]
    assert {k: asset.extra.get(k) for k in yaml_extra} == yaml_extra, f"Asset extra {asset.extra!r}"
    assert asset.extra["owner"] == contract["owner"]


def test_case_injection_runs_nothing_at_import(compile_case) -> None:
    """Importing the injection module starts no process, does no I/O, prints no 'pwned'."""
    result = compile_case("injection")
    assert result.returncode == 0, result.describe()
    modules = sorted(result.dags_dir.rglob("*.py"))
    before = {p for p in result.root.rglob("*")}
    results, proc = dagcheck.import_without_io(modules, cwd=result.root)
    for path, outcome in results.items():
        assert outcome["ok"], f"{Path(path).name}: blocked {outcome['blocked']}\n{outcome['error']}"
    assert "pwned" not in proc.stdout.splitlines(), proc.stdout
    after = {p for p in result.root.rglob("*")}
    assert after == before, (
        f"files appeared during import: {sorted(str(p.relative_to(result.root)) for p in after - before)}"
    )
    assert not [p for p in after if "pwned" in p.name]


def _nested_trigger_leaves(cases_dir: Path, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """short name -> expected as_expression leaf (name and uri from the YAML, group from the manifest)."""
    externals = dagcheck.read_yaml_via_node(cases_dir / "nested-trigger" / "input" / "contracts" / "sales" / "orders_raw.yaml")
    groups = {a["name"]: a["group"] for a in manifest["assets"]}
    return {
        a["name"].split(".")[-1]: {"asset": {"uri": a["uri"], "name": a["name"], "group": groups[a["name"]]}}
        for a in externals["assets"]
    }


def test_case_nested_trigger(compile_case, cases_dir: Path) -> None:
    """((orders_raw | returns_raw) & fx_rates): an all of an any(orders, returns) and fx rates."""
    result = compile_case("nested-trigger")
    manifest, dags = _check_compiled_project(result)
    leaf = _nested_trigger_leaves(cases_dir, manifest)
    dag = dags["sales.revenue"]
    actual = dagcheck.serialized(dag).timetable.asset_condition.as_expression()
    # Exact, no normalisation: this shape has no same-operator nesting.
    assert actual == {"all": [{"any": [leaf["orders_raw"], leaf["returns_raw"]]}, leaf["fx_rates"]]}, json.dumps(actual)


def _set_trigger(condition: str):
    def edit(root: Path) -> None:
        path = root / "contracts" / "sales" / "revenue.yaml"
        text = path.read_text(encoding="utf-8")
        new, count = re.subn(r"^  assets: .*$", lambda _m: f"  assets: {condition}", text, flags=re.MULTILINE)
        assert count == 1, "nested-trigger revenue.yaml no longer has a one-line `  assets:` trigger"
        path.write_text(new, encoding="utf-8")

    return edit


# Siblings of nested-trigger: n-ary and nested same-operator triggers. `expected` is what
# Airflow's as_expression() must give, exactly (o, r, f = orders_raw, returns_raw, fx_rates). The
# compiler writes every all/any in canonical order (nested groups first, then assets by name), so
# the author's order never reaches Airflow: "all-3" and "all-3-reordered" are one expression.
TRIGGER_VARIANTS = {
    "all-3": ("{all: [sales.orders_raw, sales.returns_raw, sales.fx_rates]}", lambda o, r, f: {"all": [f, o, r]}),
    "all-3-reordered": ("{all: [sales.returns_raw, sales.fx_rates, sales.orders_raw]}", lambda o, r, f: {"all": [f, o, r]}),
    "any-3": ("{any: [sales.orders_raw, sales.returns_raw, sales.fx_rates]}", lambda o, r, f: {"any": [f, o, r]}),
    "any-of-all-reordered": (
        "{any: [sales.fx_rates, {all: [sales.returns_raw, sales.orders_raw]}]}",
        lambda o, r, f: {"any": [{"all": [o, r]}, f]},
    ),
    "any-of-all": (
        "{any: [{all: [sales.orders_raw, sales.returns_raw]}, sales.fx_rates]}",
        lambda o, r, f: {"any": [{"all": [o, r]}, f]},
    ),
    # Repeated members (CA3804, a warning) are written once: the same expression as "any-of-all".
    "any-of-all-repeated": (
        "{any: [sales.fx_rates, {all: [sales.returns_raw, sales.orders_raw, sales.returns_raw]}, sales.fx_rates, {all: [sales.orders_raw, sales.returns_raw]}]}",
        lambda o, r, f: {"any": [{"all": [o, r]}, f]},
    ),
    # Rendered ((O & R) & F): Airflow merges the left AssetAll, so the result is flat.
    "all-left-nested": (
        "{all: [{all: [sales.orders_raw, sales.returns_raw]}, sales.fx_rates]}",
        lambda o, r, f: {"all": [o, r, f]},
    ),
    # The group comes first in canonical order: rendered ((F & R) & O), which Airflow flattens.
    "all-right-nested": (
        "{all: [sales.orders_raw, {all: [sales.returns_raw, sales.fx_rates]}]}",
        lambda o, r, f: {"all": [f, r, o]},
    ),
}


@pytest.mark.parametrize("variant", list(TRIGGER_VARIANTS))
def test_case_nested_trigger_variants(variant: str, compile_case, cases_dir: Path) -> None:
    condition, expected = TRIGGER_VARIANTS[variant]
    result = compile_case("nested-trigger", edit=(variant, _set_trigger(condition)))
    manifest, dags = _check_compiled_project(result)  # includes the normalised manifest comparison
    leaf = _nested_trigger_leaves(cases_dir, manifest)
    actual = dagcheck.serialized(dags["sales.revenue"]).timetable.asset_condition.as_expression()
    assert actual == expected(leaf["orders_raw"], leaf["returns_raw"], leaf["fx_rates"]), json.dumps(actual)
