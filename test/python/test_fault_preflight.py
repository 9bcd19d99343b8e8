"""Fault 6 replayed: ``contract-assets preflight`` catches, before deploy, what used to fail only
when the task ran: an entrypoint that does not import, SQL that does not parse, a Connection that
does not exist. Runs the real CLI (``node bin/contract-assets.js``) against the project's venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import dagcheck

BASE = dagcheck.REPO_ROOT / "test" / "cases" / "_base"

BROKEN_PY = """\
apiVersion: contract-assets/v1
kind: TransformContract
id: sales.scores
version: 1.0.0
domain: sales
owner: team-sales-data
producer:
  type: python
  entrypoint: sales_jobs.scores:compute
trigger: manual
datasets:
  - name: scores
    schema: {version: 1, properties: [{name: id, logicalType: string}]}
"""

BROKEN_SQL = """\
apiVersion: contract-assets/v1
kind: TransformContract
id: sales.orders_clean
version: 1.0.0
domain: sales
owner: team-sales-data
producer: {type: sql, path: sql/orders_clean.sql}
trigger: manual
datasets:
  - name: orders_clean
    schema: {version: 1, properties: [{name: order_id, logicalType: string}]}
    quality:
      - {name: few_nulls, type: sql, query: "select count(*) form {dataset}", mustBe: 0, severity: warning}
"""

INGEST = """\
apiVersion: contract-assets/v1
kind: IngestionContract
id: sales.orders_raw
version: 1.0.0
domain: sales
owner: team-sales-data
mode: load
source:
  name: shop.orders_export
  uri: "s3://shop-exports/orders"
  system: shop
  format: csv
  connection_id: shop_exports
trigger: manual
datasets:
  - name: orders_raw
    schema: {version: 1, properties: [{name: order_id, logicalType: string}]}
"""


def _preflight(root: Path, *args: str, **env: str) -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run(
        [dagcheck.node_executable(), str(dagcheck.CLI), "preflight", "--root", str(root), "--format", "json", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**dagcheck.subprocess_env(), "CONTRACT_ASSETS_PYTHON": str(dagcheck.REPO_ROOT / ".venv" / "bin" / "python"), **env},
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout)["diagnostics"], proc.stderr


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    shutil.copytree(BASE, root)
    (root / "contracts" / "sales").mkdir(parents=True)
    (root / "contracts" / "sales" / "scores.yaml").write_text(BROKEN_PY, encoding="utf-8")
    (root / "contracts" / "sales" / "orders_clean.yaml").write_text(BROKEN_SQL, encoding="utf-8")
    (root / "contracts" / "sales" / "orders_raw.yaml").write_text(INGEST, encoding="utf-8")
    (root / "sql").mkdir()
    (root / "sql" / "orders_clean.sql").write_text("select order_id\nfrom orders where and\n", encoding="utf-8")
    return root


def _where(d: dict[str, Any]) -> tuple[str, str, int, int]:
    return d["code"], d["location"]["file"], d["location"]["line"], d["location"]["column"]


def test_preflight_reports_each_fault_at_its_source(tmp_path: Path) -> None:
    root = _project(tmp_path)
    status, diagnostics, _ = _preflight(root)
    by_code = {d["code"]: d for d in diagnostics}
    assert status == 1
    assert _where(by_code["CA8801"])[:3] == ("CA8801", "contracts/sales/scores.yaml", 9)
    assert "ModuleNotFoundError" in by_code["CA8801"]["message"] or "cannot be imported" in by_code["CA8801"]["message"]
    assert _where(by_code["CA8802"])[:3] == ("CA8802", "sql/orders_clean.sql", 2)
    assert 'syntax error at or near "and"' in by_code["CA8802"]["message"]
    assert _where(by_code["CA8803"])[:3] == ("CA8803", "contracts/sales/orders_clean.yaml", 13)
    assert '"few_nulls"' in by_code["CA8803"]["message"]
    assert _where(by_code["CA8804"])[:3] == ("CA8804", "contracts/sales/orders_raw.yaml", 13)
    assert '"shop_exports"' in by_code["CA8804"]["message"]
    # the warehouse Connection of the config is not defined either: the tasks would fail
    assert by_code["CA8805"]["severity"] == "error"


def test_preflight_passes_once_the_environment_has_what_the_tasks_need(tmp_path: Path) -> None:
    root = _project(tmp_path)
    jobs = tmp_path / "jobs" / "sales_jobs"
    jobs.mkdir(parents=True)
    (jobs / "__init__.py").write_text("", encoding="utf-8")
    (jobs / "scores.py").write_text("def compute(context):\n    return None\n", encoding="utf-8")
    (root / "sql" / "orders_clean.sql").write_text("select order_id\nfrom orders\n", encoding="utf-8")
    text = (root / "contracts" / "sales" / "orders_clean.yaml").read_text(encoding="utf-8")
    (root / "contracts" / "sales" / "orders_clean.yaml").write_text(text.replace(" form ", " from "), encoding="utf-8")
    status, diagnostics, stderr = _preflight(
        root,
        PYTHONPATH=str(tmp_path / "jobs"),
        AIRFLOW_CONN_SHOP_EXPORTS="aws://",
        AIRFLOW_CONN_WAREHOUSE="duckdb://",
    )
    assert (status, diagnostics) == (0, []), stderr


def test_the_bundled_project_passes_preflight_in_its_runtime_environment() -> None:
    status, diagnostics, stderr = _preflight(
        dagcheck.REPO_ROOT,
        "--no-connections",
        PYTHONPATH=str(dagcheck.REPO_ROOT / "orchestration" / "jobs"),
    )
    assert status == 0, stderr
    assert [d["code"] for d in diagnostics if d["severity"] == "error"] == []


def test_a_runtime_that_cannot_run_preflight_is_reported(tmp_path: Path) -> None:
    status, diagnostics, _ = _preflight(_project(tmp_path), "--python", str(tmp_path / "no-python"))
    assert status == 2
    assert [d["code"] for d in diagnostics] == ["CA8806"]


def test_the_workflow_runs_preflight() -> None:
    workflow = (dagcheck.REPO_ROOT / ".github" / "workflows" / "contract-assets.yml").read_text(encoding="utf-8")
    assert "contract-assets preflight" in workflow
    assert os.path.exists(dagcheck.REPO_ROOT / "scripts" / "python-env.sh")


def test_a_manifest_nested_deeper_than_python_recurses_is_refused_not_a_traceback(tmp_path: Path, capsys) -> None:
    # A hand-made manifest (the compiler writes at most 128 levels, ADR 0019) whose first DAG's
    # producer params nest 900 lists: json reads it, the check's copy of the DAG cannot recurse that far.
    import json

    from contract_runtime import preflight

    data = json.loads((dagcheck.REPO_ROOT / "generated" / "manifest.json").read_text(encoding="utf-8"))
    dag = next(d for d in data["dags"] if isinstance(d.get("runtime", {}).get("producer"), dict))
    deep: list = []
    for _ in range(900):
        deep = [deep]
    dag["runtime"]["producer"]["params"] = {"p": deep}
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert preflight.main(["--manifest", str(path), "--no-connections"]) == 2
    assert "nested too deep" in capsys.readouterr().err


def test_preflight_reports_each_modules_import_time(tmp_path: Path) -> None:
    # An entrypoint module that takes 0.4 s to import: the task pays it on every try.
    root = _project(tmp_path)
    jobs = tmp_path / "jobs" / "sales_jobs"
    jobs.mkdir(parents=True)
    (jobs / "__init__.py").write_text("", encoding="utf-8")
    (jobs / "scores.py").write_text("import time\n\ntime.sleep(0.4)\n\n\ndef compute(context):\n    return None\n", encoding="utf-8")
    path = os.pathsep.join([str(tmp_path / "jobs"), str(dagcheck.REPO_ROOT / "orchestration")])
    _status, diagnostics, stderr = _preflight(root, "--no-connections", PYTHONPATH=path)
    assert [d["code"] for d in diagnostics if d["code"] == "CA8801"] == [], stderr
    lines = stderr.split("preflight: import time of each module the DAGs import", 1)[1].splitlines()[1:]
    times = {line.split()[0]: line.split()[1:] for line in lines if line.startswith("  ")}
    # The operators every DAG module imports, each producer module in use, the entrypoint's module.
    assert sorted(times) == [
        "contract_runtime.operators",
        "contract_runtime.producers.load",
        "contract_runtime.producers.python",
        "contract_runtime.producers.sql",
        "sales_jobs.scores",
    ]
    seconds, unit, *rest = times["sales_jobs.scores"]
    assert unit == "s" and 0.4 <= float(seconds) < 5
    assert " ".join(rest) == "imported by sales.scores"
    assert " ".join(times["contract_runtime.operators"][2:]) == "imported by sales.orders_clean, sales.orders_raw, sales.scores"
