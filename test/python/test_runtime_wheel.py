"""The runtime as a wheel, next to Airflow in a fresh virtual environment (issue 17, ADR 0018).

The module fixture builds ``contract-runtime`` from a copy of ``orchestration/`` with the
project venv's pip (``--no-build-isolation``: setuptools is in the lock), creates a fresh venv with
the project venv's uv and installs the wheel into it with its declared dependencies, constrained
to ``requirements.lock`` (so Airflow is the pinned 3.2.2; uv serves everything from its cache),
then repairs that Airflow as a deployment must (``scripts/fix-airflow.py``, ADR 0008) and
migrates a SQLite metadata database. The project is a fresh ``contract-assets init`` compiled by
the packed compiler (``npm pack``, installed into a fresh folder): the issue's "done when", a fresh
folder, the packed compiler, ``init``, ``compile`` and the wheel running the scaffolded contracts
end to end. Nothing of this repository is on the fresh venv's path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dagcheck import REPO_ROOT, node_executable

VENV_BIN = Path(sys.executable).parent
UV = VENV_BIN / "uv"
LOCALRUN = REPO_ROOT / "scripts" / "localrun.py"
PYPROJECT = tomllib.loads((REPO_ROOT / "orchestration" / "pyproject.toml").read_text("utf-8"))
VERSION = PYPROJECT["project"]["version"]


@dataclass
class Deployment:
    wheel: Path
    python: Path
    home: Path
    project: Path
    base: Path


def _run(args: list[str | Path], *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{args[:3]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def _clean_env(home: Path, project: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OPENLINEAGE", "CONTRACT_ASSETS_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__DAGS_FOLDER=str(project / "generated" / "dags"),
        CONTRACT_ASSETS_WAREHOUSE=str(home / "warehouse.duckdb"),
        OPENLINEAGE__TRANSPORT__TYPE="file",
        OPENLINEAGE__TRANSPORT__LOG_FILE_PATH=str(home / "lineage.jsonl"),
        OPENLINEAGE__TRANSPORT__APPEND="true",
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    base = tmp_path_factory.mktemp("wheel")
    source = base / "src"
    source.mkdir()
    # A copy, links resolved (manifest-v2.schema.json links to the compiler's schema), so the
    # build leaves nothing in the repository.
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO_ROOT / "orchestration" / name, source / name)
    shutil.copytree(REPO_ROOT / "orchestration" / "contract_runtime", source / "contract_runtime", symlinks=False, ignore=shutil.ignore_patterns("__pycache__"))
    dist = base / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", dist, source])
    wheel = next(dist.glob("contract_runtime-*.whl"))

    venv = base / "venv"
    _run([UV, "venv", "--quiet", "--python", sys.executable, venv])
    python = venv / "bin" / "python"
    install = [UV, "pip", "install", "--quiet", "--python", python, "--constraint", REPO_ROOT / "requirements.lock", wheel]
    try:
        _run([*install, "--offline"])
    except AssertionError:
        _run(install)  # the uv cache lacked something: the registry has it
    _run([python, REPO_ROOT / "scripts" / "fix-airflow.py"])

    # The compiler as a user gets it: packed, installed into a fresh folder (npm's cache first).
    npm = shutil.which("npm")
    assert npm, "npm is not on PATH"
    packed = _run([npm, "pack", "--ignore-scripts", "--json", "--pack-destination", base], cwd=REPO_ROOT)
    tarball = base / json.loads(packed.stdout)[0]["filename"]
    installer = base / "installer"
    installer.mkdir()
    _run([npm, "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], cwd=installer)
    cli = installer / "node_modules" / "contract-assets" / "bin" / "contract-assets.js"
    project = base / "project"
    _run([node_executable(), cli, "init", project])
    _run([node_executable(), cli, "compile"], cwd=project)
    home = base / "home"
    home.mkdir()
    _run([python, "-m", "airflow", "db", "migrate"], env=_clean_env(home, project))
    yield Deployment(wheel=wheel, python=python, home=home, project=project, base=base)


def test_the_wheel_holds_the_package_its_schemas_and_its_declared_dependencies(deployment: Deployment) -> None:
    assert deployment.wheel.name == f"contract_runtime-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(deployment.wheel) as wheel:
        names = set(wheel.namelist())
        assert "contract_runtime/py.typed" in names
        facets = sorted(p.name for p in (REPO_ROOT / "orchestration" / "contract_runtime" / "facets").glob("*.json"))
        assert facets and all(f"contract_runtime/facets/{f}" in names for f in facets)
        # The manifest schema is the compiler's file itself, not the link to it.
        assert wheel.read("contract_runtime/manifest-v2.schema.json") == (REPO_ROOT / "compiler" / "schemas" / "manifest" / "v2.schema.json").read_bytes()
        metadata = wheel.read(f"contract_runtime-{VERSION}.dist-info/METADATA").decode()
    from packaging.requirements import Requirement

    required = [Requirement(line.split(": ", 1)[1]) for line in metadata.splitlines() if line.startswith("Requires-Dist: ") and "extra ==" not in line]
    declared = [Requirement(d) for d in PYPROJECT["project"]["dependencies"]]
    key = lambda r: (r.name.lower(), frozenset(str(s) for s in r.specifier))  # noqa: E731
    assert sorted(map(key, required)) == sorted(map(key, declared)), metadata
    assert ("apache-airflow", frozenset({">=3.2.2", "<3.3"})) in map(key, required)


def _python(deployment: Deployment, code: str, **env: str) -> Any:
    proc = _run([deployment.python, "-c", code], env=_clean_env(deployment.home, deployment.project, **env), cwd=deployment.base)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_generated_dags_of_an_init_project_import_next_to_airflow(deployment: Deployment) -> None:
    result = _python(
        deployment,
        "import json, sys, contract_runtime, airflow\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        f"bag = DagBag(dag_folder={str(deployment.project / 'generated' / 'dags')!r}, include_examples=False, safe_mode=False)\n"
        "print(json.dumps({'errors': bag.import_errors, 'dags': sorted(bag.dag_ids), 'runtime': contract_runtime.__file__,"
        " 'version': contract_runtime.__version__, 'airflow': airflow.__version__,"
        " 'tasks': {d: [t.task_id for t in bag.dags[d].tasks] for d in bag.dag_ids}}))",
    )
    assert result["errors"] == {}
    manifest = json.loads((deployment.project / "generated" / "manifest.json").read_text("utf-8"))
    assert result["dags"] == sorted([d["dag_id"] for d in manifest["dags"]] + ["contract_assets_freshness_monitor"])
    assert result["dags"] == ["contract_assets_freshness_monitor", "sales.orders_daily", "sales.orders_raw"]
    assert result["tasks"]["sales.orders_daily"] == ["produce", "audit", "publish"]
    assert result["runtime"].startswith(str(deployment.python.parent.parent)), result["runtime"]
    assert result["version"] == VERSION and result["airflow"] == "3.2.2"


def _localrun(deployment: Deployment, project: Path, home: Path, *extra: str) -> tuple[dict[str, Any], str]:
    proc = subprocess.run(
        [str(deployment.python), str(LOCALRUN), "run", "--project", str(project), "--logical-date", "2026-04-15T02:00:00+00:00", *extra],
        env=_clean_env(home, project),
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"localrun failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT ") :]), proc.stdout + proc.stderr


def test_the_scaffolded_contracts_run_end_to_end_in_the_fresh_environment(deployment: Deployment) -> None:
    result, log = _localrun(deployment, deployment.project, deployment.home)
    assert result["order"] == ["sales.orders_raw", "sales.orders_daily"]
    assert {d: r["state"] for d, r in result["runs"].items()} == {"sales.orders_raw": "success", "sales.orders_daily": "success"}, log[-4000:]
    rows = _python(
        deployment,
        "import duckdb, json, os\n"
        "con = duckdb.connect(os.environ['CONTRACT_ASSETS_WAREHOUSE'], read_only=True)\n"
        "print(json.dumps([[str(c) for c in r] for r in con.execute('select order_date, currency, order_count, amount from sales.orders_daily order by 1, 2').fetchall()]))",
    )
    # orchestration/sample_data/shop/orders.csv of the scaffold: five orders on two days.
    assert rows == [
        ["2026-04-14", "EUR", "2", "155.50"],
        ["2026-04-14", "USD", "1", "80.25"],
        ["2026-04-15", "EUR", "1", "210.00"],
        ["2026-04-15", "GBP", "1", "15.00"],
    ]


def test_dags_of_another_compiler_minor_version_fail_at_task_start_naming_both_versions(deployment: Deployment) -> None:
    project = deployment.base / "newer-project"
    shutil.copytree(deployment.project, project)
    manifest_path = project / "generated" / "manifest.json"
    manifest = json.loads(manifest_path.read_text("utf-8"))
    major, minor, _ = VERSION.split(".")
    newer = f"{major}.{int(minor) + 1}.0"
    manifest["compiler"]["version"] = newer
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    home = deployment.base / "newer-home"
    shutil.copytree(deployment.home, home, ignore=shutil.ignore_patterns("warehouse.duckdb*", "logs"))
    result, log = _localrun(deployment, project, home, "--only", "sales.orders_raw")
    assert result["runs"]["sales.orders_raw"]["state"] == "failed"
    expected = (
        f"contract 'sales.orders_raw': manifest {str(manifest_path.resolve())!r}: the DAGs were generated by contract-assets {newer}, "
        f"but this worker runs contract-runtime {VERSION}, which runs the DAGs of contract-assets {major}.{minor}.x only: "
        f'install "contract-runtime~={newer}" in the Airflow image, or recompile with contract-assets {VERSION} (docs/deploy.md)'
    )
    assert expected in log, log[-4000:]
    # Failed at once, not retried: the error is one no retry can fix.
    assert "AirflowFailException" in log


@pytest.mark.parametrize(
    ("compiler", "runtime", "fits"),
    [("0.1.0", "0.1.0", True), ("0.1.7", "0.1.2", True), ("0.2.0", "0.1.0", False), ("1.1.0", "0.1.0", False), ("0.1", "0.1.3", True), ("next", "0.1.0", False)],
)
def test_a_runtime_runs_the_dags_of_the_same_major_minor(compiler: str, runtime: str, fits: bool) -> None:
    from contract_runtime.manifest import compiler_version_problem

    problem = compiler_version_problem(compiler, runtime)
    assert (problem is None) is fits
    if problem is not None:
        assert f"contract-assets {compiler}" in problem and f"contract-runtime {runtime}" in problem
