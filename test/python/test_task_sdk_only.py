"""Task code uses only the Task SDK (issue 36, item 3; ADR 0030).

A worker of Airflow 3 talks to the API server only: it has no metadata-database session, and
Airflow's core (``airflow.models``, ``airflow.settings``, ``airflow.utils.session``,
``airflow.configuration``, ...) need not even be installed beside ``apache-airflow-task-sdk``.
Two checks:

* static: every import in the runtime (``orchestration/contract_runtime``), in the generated DAG
  modules (``generated/dags`` and every golden case's) and in the templates they come from names
  ``airflow.sdk`` (and its submodules), a provider module (``airflow.providers.*``, which on
  Airflow 3 uses the SDK), or nothing of Airflow; so does every module name written as a string (``sys.modules.get("...")``,
  ``importlib.import_module("...")``);
* dynamic: write-audit-publish through the operators in a fresh process under guards
  (``task_sdk_guard.py``): no module of the core is loaded or imported by the runtime, no
  SQLAlchemy session or engine connection is opened, on the embedded DuckDB and on PostgreSQL
  (the provider's ``PostgresHook`` from ``Connection.get_hook()``), and a ``load`` from S3 (moto on
  loopback) through ``airflow.sdk.ObjectStoragePath``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_support import dag_entry, write_manifest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

#: What task code may import of Airflow: the Task SDK.
SDK = "airflow.sdk"
#: Provider modules: on Airflow 3 a provider reaches Airflow through
#: ``airflow.providers.common.compat.sdk``, i.e. the Task SDK (the dynamic check below proves it
#: for the ``PostgresHook`` that ``Connection.get_hook()`` returns). Task code names them in three
#: ways: the OpenLineage provider's modules, read only when Airflow loaded them (lineage/runid.py,
#: lineage/identity.py); a notifier's class path from the config (SmtpNotifier, HttpNotifier),
#: imported by the freshness monitor or the triggerer; a warehouse hook, only through the SDK.
PROVIDERS = "airflow.providers."
MODULE_NAME = re.compile(r"airflow(\.[A-Za-z_][A-Za-z0-9_]*)+")


def allowed(name: str) -> bool:
    """Whether task code may name the module ``name`` (not Airflow, the SDK, or a read-if-loaded provider)."""
    if name != "airflow" and not name.startswith("airflow."):
        return not (name == "sqlalchemy.orm" or name.startswith("sqlalchemy.orm."))
    return name == SDK or name.startswith((SDK + ".", PROVIDERS))


def module_names(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, module name)`` of every import and every module name written as a string.

    Imports: ``import a.b`` gives ``a.b``; ``from a import b`` gives ``a`` and ``a.b`` (``b`` may
    be a submodule); relative imports are the package's own. Strings: any string constant that is
    a dotted ``airflow.`` name (``sys.modules.get("airflow.configuration")``), docstrings left out.
    """
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            for alias in node.names:
                if alias.name != "*":
                    yield node.lineno, f"{node.module}.{alias.name}"
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and MODULE_NAME.fullmatch(node.value)
        ):
            yield node.lineno, node.value


def violations_in(source: str, where: str) -> list[str]:
    """``<where>:<line>: <module>`` for every name in ``source`` task code may not use."""
    return [f"{where}:{line}: {name}" for line, name in module_names(ast.parse(source)) if not allowed(name)]


def template_imports(text: str) -> str:
    """The import lines of a Handlebars template, its ``{{...}}`` replaced by a name, as Python."""
    lines = [line for line in text.splitlines() if re.match(r"(from|import)\s", line)]
    return "\n".join(re.sub(r"\{\{[^}]*\}\}", "Name", line) for line in lines) + "\n"


def task_code() -> list[tuple[str, str]]:
    """``(path, Python source)`` of everything that runs in a task process and is ours."""
    files = sorted((ROOT / "orchestration" / "contract_runtime").rglob("*.py"))
    files += sorted((ROOT / "generated" / "dags").rglob("*.py"))
    files += sorted((ROOT / "test" / "cases").glob("*/expected/generated/dags/**/*.py"))
    files += sorted((ROOT / "orchestration" / "jobs").rglob("*.py"))
    sources = [(str(f.relative_to(ROOT)), f.read_text(encoding="utf-8")) for f in files]
    for template in sorted((ROOT / "templates").glob("*.hbs")):
        sources.append((str(template.relative_to(ROOT)), template_imports(template.read_text(encoding="utf-8"))))
    return sources


def test_the_scan_sees_what_it_must_refuse() -> None:
    """The scanner itself: each way of reaching the core is found, the SDK is not."""
    source = (
        '"""Docstrings may say airflow.models."""\n'
        "import airflow.models\n"
        "from airflow import settings\n"
        "from airflow.utils.session import create_session\n"
        "from sqlalchemy.orm import Session\n"
        "import sys\n"
        'configuration = sys.modules.get("airflow.configuration")\n'
        "def f():\n"
        "    from airflow.sdk import Connection\n"
        "    from airflow.sdk.configuration import conf\n"
        '    return sys.modules.get("airflow.providers.openlineage.conf")\n'
    )
    assert violations_in(source, "x.py") == [
        "x.py:2: airflow.models",
        "x.py:3: airflow",
        "x.py:3: airflow.settings",
        "x.py:4: airflow.utils.session",
        "x.py:4: airflow.utils.session.create_session",
        "x.py:5: sqlalchemy.orm",
        "x.py:5: sqlalchemy.orm.Session",
        "x.py:7: airflow.configuration",
    ]


def test_task_code_imports_only_the_task_sdk() -> None:
    sources = task_code()
    found = [v for path, source in sources for v in violations_in(source, path)]
    assert found == []
    # not vacuous: the runtime, the generated modules and both templates were read, and use the SDK
    paths = [p for p, _ in sources]
    assert "orchestration/contract_runtime/warehouse.py" in paths
    assert "orchestration/contract_runtime/lineage/runid.py" in paths
    assert {"templates/dag_module.py.hbs", "templates/freshness_monitor.py.hbs"} <= set(paths)
    generated = [p for p in paths if p.startswith("generated/dags/")]
    assert len(generated) > 10
    sdk_users = {p for p, s in sources for _, name in module_names(ast.parse(s)) if name.startswith(SDK)}
    assert set(generated) <= sdk_users
    assert {"orchestration/contract_runtime/operators.py", "orchestration/contract_runtime/warehouse.py"} <= sdk_users


# ------------------------------------------------------------------ dynamic


def guarded_run(manifest: str, env: dict[str, str]) -> dict[str, Any]:
    """Run ``task_sdk_guard.py`` on ``sales.orders`` of ``manifest``; its RESULT."""
    process_env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "OPENLINEAGE"))}
    process_env.update(env)
    process_env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "orchestration"), str(HERE), process_env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, str(HERE / "task_sdk_guard.py"), manifest, "sales.orders", "sales.orders", "x-datalake://curated/sales/orders"],
        capture_output=True, text=True, env=process_env, timeout=300, check=False,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT "):])
    return result


def lineage_env(tmp_path: Path) -> dict[str, str]:
    return {
        "OPENLINEAGE__TRANSPORT__TYPE": "file",
        "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH": str(tmp_path / "events.jsonl"),
        "OPENLINEAGE__TRANSPORT__APPEND": "true",
    }


def assert_clean(result: dict[str, Any], tmp_path: Path, refused: set[str] | None = None) -> None:
    """The task path ran, no violation, nothing of the core loaded; the loads the finder refused
    (and the caller did without) are at most ``refused`` (default: the common compat provider's
    shim trying the core's ``module_loading`` before the SDK's)."""
    assert result["error"] is None, result["error"]
    assert result["violations"] == []
    assert result["new_core_modules"] == []
    assert set(result["refused"]) <= (refused or {"airflow.utils.module_loading"}), result["refused"]
    # and none of them asked by the runtime
    assert not [r for r in result["refused_by"] if r[1].startswith("contract_runtime")], result["refused_by"]
    assert result["results"]["audit"] == {"status": "passed"}
    assert result["results"]["publish"] == [
        {"asset": "sales.orders", "table": "sales.orders", "row_count": 1, "quality_status": "passed", "failed_rules": []}
    ]
    assert result["results"]["asset_event_extra"]["row_count"] == 1
    # lineage ran under the guards too: START, the assertions, COMPLETE, then the callback's FAIL
    types = [json.loads(line)["eventType"] for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert types == ["START", "OTHER", "COMPLETE", "FAIL"]


def test_write_audit_publish_on_duckdb_touches_nothing_of_the_core(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, [dag_entry()])
    result = guarded_run(
        manifest,
        {"AIRFLOW_CONN_WAREHOUSE": f"duckdb://{tmp_path / 'w.duckdb'}", "AIRFLOW__CORE__EXECUTOR": "LocalExecutor", **lineage_env(tmp_path)},
    )
    assert_clean(result, tmp_path)


@pytest.fixture(scope="module")
def pg_server() -> Iterator[dict[str, Any]]:
    from servers import postgres_server

    with postgres_server() as server:
        yield server


def test_write_audit_publish_on_postgres_under_celery_touches_nothing_of_the_core(
    tmp_path: Path, pg_server: dict[str, Any]
) -> None:
    """PostgreSQL through the provider's hook (``Connection.get_hook()``), the executor Celery:
    what a worker of a distributed deployment runs (the DuckDB refusal does not apply)."""
    manifest = write_manifest(tmp_path, [dag_entry()])
    result = guarded_run(
        manifest, {"AIRFLOW_CONN_WAREHOUSE": pg_server["uri"], "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor", **lineage_env(tmp_path)}
    )
    assert_clean(result, tmp_path)


def test_the_guard_catches_a_core_import_at_task_time(tmp_path: Path) -> None:
    """Not vacuous: an import of ``airflow.models`` made as from a runtime module (the package is
    loaded already, so only the import hook sees it) and a session opened are both reported, and
    the task fails."""
    job = tmp_path / "jobs" / "core_user.py"
    job.parent.mkdir()
    job.write_text(
        "def produce(context):\n"
        "    # as if a runtime module imported the core: airflow.models is loaded, its Variable is not\n"
        "    try:\n"
        "        exec('from airflow.models import Variable', {'__name__': 'contract_runtime.producers.fake'})\n"
        "    except ImportError:\n"
        "        pass\n"
        "    from sqlalchemy.orm import Session\n"
        "    Session()\n"
    )
    dag = dag_entry(producer={"type": "python", "entrypoint": "core_user:produce", "params": {}})
    manifest = write_manifest(tmp_path, [dag])
    result = guarded_run(
        manifest,
        {"AIRFLOW_CONN_WAREHOUSE": f"duckdb://{tmp_path / 'w.duckdb'}", "PYTHONPATH": str(job.parent), **lineage_env(tmp_path)},
    )
    assert result["error"] is not None and "a SQLAlchemy Session opened at task time" in result["error"]
    assert "contract_runtime.producers.fake imports airflow.models.Variable" in result["violations"]
    assert any(v.startswith("a SQLAlchemy Session opened") for v in result["violations"])
    # the finder kept the core's Variable out, as a worker without the core would
    assert "airflow.models.variable" in result["refused"]


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, Any]]:
    from servers import s3_server

    with s3_server() as server:
        yield server


def test_a_load_from_object_storage_touches_nothing_of_the_core(tmp_path: Path, s3: dict[str, Any]) -> None:
    """The object-store path: a ``load`` from S3 (moto on loopback) through
    ``airflow.sdk.ObjectStoragePath`` and the Amazon provider's filesystem, under the guards."""
    from servers import S3_CONN_ID, s3_client, s3_connection_json

    client = s3_client(s3)
    client.create_bucket(Bucket="ca-sdk-only")
    client.put_object(Bucket="ca-sdk-only", Key="orders/1.csv", Body=b"order_id,amount,status,updated_at\no1,1.50,open,2026-04-14T10:00:00\n")
    dag = dag_entry(
        producer={"type": "load"},
        kind="IngestionContract",
        mode="load",
        source={"name": "shop.orders_export", "uri": "s3://ca-sdk-only/orders/", "format": "csv", "system": "shop", "connection_id": S3_CONN_ID},
    )
    dag["runtime"]["datasets"][0]["quality"] = []
    dag["inlets"] = ["shop.orders_export"]
    manifest = write_manifest(tmp_path, [dag])
    result = guarded_run(
        manifest,
        {
            "AIRFLOW_CONN_WAREHOUSE": f"duckdb://{tmp_path / 'w.duckdb'}",
            f"AIRFLOW_CONN_{S3_CONN_ID.upper()}": s3_connection_json(s3),
            **lineage_env(tmp_path),
        },
    )
    # What the Task SDK's providers manager meets when it registers the filesystems (imports of
    # provider and plug-in modules, each inside a try): probes of the core by
    # airflow.providers.common.compat.assets, airflow.providers.standard.operators.python,
    # airflow._shared.module_loading and an installed dagfactory; refused here, done without, the
    # load published.
    assert_clean(
        result,
        tmp_path,
        {"airflow.utils.module_loading", "airflow.models.dagrun", "airflow.models.variable", "airflow.operators", "airflow.api_fastapi"},
    )
