"""Running dbt for a contract: profile, deferral state, the dbt process and its results (ADR 0012).

The ``dbt`` producer and the audit of a ``dbt`` contract call :func:`invoke`. Each call:

1. writes a dbt **profile** for the contract's warehouse into a fresh temporary folder, from the
   same Connection the other producers use (:func:`profile_target`): the embedded DuckDB file,
   or a PostgreSQL Connection (host, port, login, database; the password reaches dbt only as the
   environment variable ``CONTRACT_ASSETS_DBT_PASSWORD``, never a file). The profile's schema is
   the run's dbt staging schema (:func:`contract_runtime.tables.dbt_staging_schema`), so every
   model the run builds lands where consumers cannot see it;
2. writes a **deferral state**: the project's committed ``manifest.json`` with every upstream model
   of the contract pointed at its *published* table (``runtime.producer.upstream_models``), and
   runs dbt with ``--defer --state``: a ``ref`` to a model the run does not build resolves to the
   published table, because that model's relation does not exist in the staging schema (dbt's
   deferral rule; no ``--favor-state``, so a test's ``ref`` to the model under test finds the
   staging relation);
3. runs ``dbt`` (or ``dbt-ol`` when lineage is on, :func:`lineage_env`) as a subprocess from the
   dbt environment (``.venv-dbt``; :func:`dbt_executable`), without a shell, with its target and
   log paths in the temporary folder (the project folder is only read);
4. reads ``run_results.json`` and the run's ``manifest.json`` into :class:`NodeResult` items.

dbt's own failures are reported by :class:`DbtFailed` (the process failed before it wrote its
results: retryable) or by the caller from the results (a model or test that errors).

Environment (all optional): ``CONTRACT_ASSETS_DBT_BIN`` (the folder holding ``dbt`` and
``dbt-ol``; default ``<project root>/.venv-dbt/bin`` when it exists, else ``PATH``),
``CONTRACT_ASSETS_DBT_THREADS`` (default 1).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract_runtime.sqlutil import TableRef
from contract_runtime.warehouse import DbApiWarehouse, DuckDBWarehouse, Warehouse

__all__ = [
    "DbtFailed",
    "DbtInvocation",
    "DbtSetupError",
    "NodeResult",
    "dbt_executable",
    "deferral_state",
    "invoke",
    "lineage_env",
    "profile_target",
]

log = logging.getLogger(__name__)

#: The profile's name inside the written ``profiles.yml`` is the project's own ``profile:``.
PASSWORD_VARIABLE: str = "CONTRACT_ASSETS_DBT_PASSWORD"
_OUTPUT_TAIL_LINES: int = 30


class DbtSetupError(Exception):
    """dbt cannot be run for this contract (no dbt installed, no adapter for the Connection, an
    unreadable project or manifest): no retry helps."""


class DbtFailed(RuntimeError):
    """The dbt process failed without results (it crashed or could not connect): retryable."""


@dataclass(frozen=True)
class NodeResult:
    """One node of a dbt invocation's ``run_results.json``, with what the run's manifest says of it.

    :ivar unique_id: ``model.<package>.<name>``, ``test.<package>.<name>.<hash>``, ...
    :ivar name: The node name.
    :ivar resource_type: ``model``, ``seed``, ``test``, ...
    :ivar status: dbt's status: ``success``, ``error``, ``skipped`` (models, seeds); ``pass``,
        ``fail``, ``warn``, ``error``, ``skipped`` (tests).
    :ivar message: dbt's message (an error's text), or None.
    :ivar failures: A test's failing row count (None for models).
    :ivar path: The node's file, relative to the dbt project (``models/x.sql``).
    :ivar relation: ``(schema, identifier)`` of a model or seed the run built.
    :ivar severity: A test's configured severity: ``error`` or ``warn``.
    :ivar column: The column a generic test is on, or None.
    :ivar test: A generic test's name (``unique``, ``accepted_values``), ``singular`` otherwise.
    :ivar attached: The model a test belongs to (its ``attached_node``, else its first model
        parent), or None.
    """

    unique_id: str
    name: str
    resource_type: str
    status: str
    message: str | None
    failures: int | None
    path: str
    relation: tuple[str, str] | None = None
    severity: str | None = None
    column: str | None = None
    test: str | None = None
    attached: str | None = None


@dataclass
class DbtInvocation:
    """What one dbt call returned.

    :ivar argv: The command line (no secret: the password is in the environment).
    :ivar returncode: The process's exit code (dbt: 0 ok, 1 a node failed, 2 dbt failed).
    :ivar results: One :class:`NodeResult` per executed node, in ``run_results.json`` order.
    :ivar output: The last lines of dbt's output (stdout and stderr).
    :ivar elapsed: ``run_results.json`` ``elapsed_time`` in seconds.
    """

    argv: list[str]
    returncode: int
    results: list[NodeResult] = field(default_factory=list)
    output: str = ""
    elapsed: float = 0.0


def dbt_executable(project_root: Path, name: str = "dbt") -> str:
    """Where ``dbt`` (or ``dbt-ol``) is: ``$CONTRACT_ASSETS_DBT_BIN/<name>``, else the project's
    ``.venv-dbt/bin/<name>`` (built by ``scripts/python-env.sh``), else ``<name>`` on ``PATH``.

    :raises DbtSetupError: When none exists.
    """
    folder = os.environ.get("CONTRACT_ASSETS_DBT_BIN")
    candidates = [Path(folder) / name] if folder else []
    candidates.append(project_root / ".venv-dbt" / "bin" / name)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    where = ", ".join(str(c) for c in candidates)
    raise DbtSetupError(f"{name!r} not found ({where}, PATH); run scripts/python-env.sh to build .venv-dbt")


def profile_target(wh: Warehouse, schema: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The dbt profile output for the warehouse ``wh``, building into ``schema``.

    :returns: ``(output, env)``: the ``outputs.<target>`` mapping of ``profiles.yml`` and the
        environment variables it reads (the password, for a server database).
    :raises DbtSetupError: When dbt has no adapter here for the warehouse's Connection type.
    """
    threads = int(os.environ.get("CONTRACT_ASSETS_DBT_THREADS", "1") or 1)
    if isinstance(wh, DuckDBWarehouse):
        return {"type": "duckdb", "path": wh.path, "schema": schema, "threads": threads}, {}
    if isinstance(wh, DbApiWarehouse) and wh.dialect == "postgres":
        conn = wh._airflow_connection or getattr(wh.hook, "connection", None)
        if conn is None:
            raise DbtSetupError(f"connection {wh.conn_id!r}: no Airflow Connection to write a dbt profile from")
        database = getattr(wh.hook, "database", None) or conn.schema or "postgres"
        output: dict[str, Any] = {
            "type": "postgres",
            "host": conn.host or "localhost",
            "port": int(conn.port or 5432),
            "user": conn.login or "postgres",
            "password": "{{ env_var('" + PASSWORD_VARIABLE + "', '') }}",
            "dbname": str(database),
            "schema": schema,
            "threads": threads,
            "connect_timeout": 10,
            "retries": 0,
        }
        sslmode = (conn.extra_dejson or {}).get("sslmode") if hasattr(conn, "extra_dejson") else None
        if sslmode:
            output["sslmode"] = str(sslmode)
        return output, {PASSWORD_VARIABLE: conn.password or ""}
    raise DbtSetupError(
        f"the dbt producer supports the embedded DuckDB warehouse and PostgreSQL Connections, not {wh.description}"
    )


def _read_json(path: Path, what: str, shown: str | None = None) -> dict[str, Any]:
    """One JSON object from ``path``; messages name ``shown`` instead when the file is in a
    temporary folder the user never sees (``target/run_results.json`` of one invocation)."""
    name = shown or str(path)
    try:
        with path.open(encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise DbtSetupError(f"cannot read the {what} {name}: {str(exc).replace(str(path), name)}") from exc
    if not isinstance(data, dict):
        raise DbtSetupError(f"the {what} {name} is not a JSON object")
    return data


def deferral_state(
    project_manifest: Path, upstream_models: Mapping[str, Mapping[str, str]], database: str | None
) -> dict[str, Any]:
    """The committed dbt manifest with each upstream model pointed at its published table.

    :param project_manifest: The project's committed ``manifest.json`` (from ``dbt parse``).
    :param upstream_models: Model unique id -> ``{"schema", "name"}`` of its published table.
    :param database: The warehouse's database (DuckDB catalog or PostgreSQL database).
    :raises DbtSetupError: When the manifest is unreadable or lacks an upstream model.
    """
    manifest = _read_json(project_manifest, "dbt manifest")
    nodes = manifest.get("nodes")
    if not isinstance(nodes, dict):
        raise DbtSetupError(f"the dbt manifest {project_manifest} has no nodes")
    for unique_id, table in upstream_models.items():
        node = nodes.get(unique_id)
        if not isinstance(node, dict):
            raise DbtSetupError(
                f"the dbt manifest {project_manifest} has no node {unique_id!r}; regenerate it with dbt parse"
            )
        node["schema"], node["alias"] = str(table["schema"]), str(table["name"])
        if database:
            node["database"] = database
        parts = [p for p in (node.get("database"), node["schema"], node["alias"]) if p]
        node["relation_name"] = ".".join('"' + str(p).replace('"', '""') + '"' for p in parts)
    return manifest


def lineage_env(parent: Mapping[str, str] | None) -> dict[str, str]:
    """The variables that make dbt-ol's events children of the contract run.

    :param parent: ``{"namespace", "name", "run_id", "root_namespace", "root_name",
        "root_run_id"}``: the contract run (the job of the runtime's own events) and its root.
    :returns: ``OPENLINEAGE_PARENT_ID`` and ``OPENLINEAGE_ROOT_PARENT_ID``
        (``namespace/name/runId``, what dbt-ol reads) and ``OPENLINEAGE_CONTEXT`` (the same as
        JSON, which dbt-ol prefers and which survives a ``/`` in a name); ``{}`` without a parent.
    """
    if not parent:
        return {}
    context = {
        "parent": {
            "run": {"runId": parent["run_id"]},
            "job": {"namespace": parent["namespace"], "name": parent["name"]},
            "root": {
                "run": {"runId": parent["root_run_id"]},
                "job": {"namespace": parent["root_namespace"], "name": parent["root_name"]},
            },
        }
    }
    return {
        "OPENLINEAGE_PARENT_ID": f"{parent['namespace']}/{parent['name']}/{parent['run_id']}",
        "OPENLINEAGE_ROOT_PARENT_ID": f"{parent['root_namespace']}/{parent['root_name']}/{parent['root_run_id']}",
        "OPENLINEAGE_CONTEXT": json.dumps(context, sort_keys=True),
    }


def _yaml_scalar(value: Any) -> str:
    # JSON is YAML: a JSON string or number is a valid YAML flow scalar.
    return json.dumps(value)


def _profiles_yml(profile: str, output: Mapping[str, Any]) -> str:
    lines = [f"{_yaml_scalar(profile)}:", "  target: contract_assets", "  outputs:", "    contract_assets:"]
    lines += [f"      {key}: {_yaml_scalar(value)}" for key, value in output.items()]
    return "\n".join(lines) + "\n"


def _project_profile(project_dir: Path) -> str:
    try:
        text = (project_dir / "dbt_project.yml").read_text(encoding="utf-8")
    except OSError as exc:
        raise DbtSetupError(f"cannot read {project_dir / 'dbt_project.yml'}: {exc}") from exc
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "profile" and not line.startswith((" ", "\t")):
            return value.split("#", 1)[0].strip().strip("'\"")
    raise DbtSetupError(f"{project_dir / 'dbt_project.yml'} names no profile")


def _tail(text: str) -> str:
    return "\n".join(text.strip().splitlines()[-_OUTPUT_TAIL_LINES:])


def _node_result(entry: Mapping[str, Any], nodes: Mapping[str, Any]) -> NodeResult:
    unique_id = str(entry.get("unique_id"))
    node = nodes.get(unique_id) or {}
    resource_type = str(node.get("resource_type") or unique_id.split(".", 1)[0])
    config = node.get("config") or {}
    relation = None
    if resource_type in ("model", "seed", "snapshot") and node.get("schema"):
        relation = (str(node["schema"]), str(node.get("alias") or node.get("name")))
    test_name = column = attached = severity = None
    if resource_type == "test":
        metadata = node.get("test_metadata") or {}
        test_name = str(metadata["name"]) if metadata.get("name") else "singular"
        column = node.get("column_name") or (metadata.get("kwargs") or {}).get("column_name")
        attached = node.get("attached_node")
        if not attached:
            parents = [p for p in (node.get("depends_on") or {}).get("nodes", []) if str(p).startswith("model.")]
            attached = parents[0] if parents else None
        severity = str(config.get("severity") or "error").lower()
    failures = entry.get("failures")
    return NodeResult(
        unique_id=unique_id,
        name=str(node.get("name") or unique_id.rsplit(".", 1)[-1]),
        resource_type=resource_type,
        status=str(entry.get("status")),
        message=str(entry["message"]) if entry.get("message") else None,
        failures=int(failures) if isinstance(failures, int) else None,
        path=str(node.get("original_file_path") or node.get("path") or ""),
        relation=relation,
        severity=severity,
        column=str(column) if column else None,
        test=test_name,
        attached=str(attached) if attached else None,
    )


#: How messages name the temporary folder of one dbt invocation (its profiles, target and logs).
_WORK_FOLDER = "<dbt work folder>"


@contextmanager
def _workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ca-dbt-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def invoke(
    command: str,
    select: Sequence[str],
    *,
    project_dir: Path,
    project_root: Path,
    wh: Warehouse,
    schema: str,
    project_manifest: Path,
    upstream_models: Mapping[str, Mapping[str, str]],
    extra_args: Sequence[str] = (),
    lineage_parent: Mapping[str, str] | None = None,
    lineage: bool = False,
    env: Mapping[str, str] | None = None,
) -> DbtInvocation:
    """Run ``dbt <command> --select <select...>`` for a contract and read its results.

    :param command: ``run``, ``seed`` or ``test``.
    :param select: The nodes, by name (the contract's models, or their seeds).
    :param project_dir: The dbt project folder.
    :param project_root: The contract project's root (where ``.venv-dbt`` is).
    :param wh: The open warehouse; the embedded DuckDB file is released while dbt runs.
    :param schema: The profile's schema: the run's dbt staging schema.
    :param project_manifest: The committed ``manifest.json`` (for the deferral state).
    :param upstream_models: Model unique id -> its published ``{"schema", "name"}``.
    :param extra_args: More dbt arguments (after ``--select``).
    :param lineage_parent: The contract run, for :func:`lineage_env`.
    :param lineage: Run through ``dbt-ol`` (its events nest under ``lineage_parent``).
    :param env: The base environment (default ``os.environ``).
    :returns: The invocation with its results (``returncode`` 1 means a node failed: read the
        results).
    :raises DbtSetupError: No dbt, no adapter, no readable project or manifest.
    :raises DbtFailed: dbt exited without writing ``run_results.json``.
    """
    profile = _project_profile(project_dir)
    output, secret_env = profile_target(wh, schema)
    database = None
    try:
        database = wh.location().database
    except Exception:  # noqa: BLE001 - the database then stays as dbt parse recorded it
        database = None
    executable = dbt_executable(project_root, "dbt-ol" if lineage else "dbt")
    with _workdir() as work:
        (work / "profiles.yml").write_text(_profiles_yml(profile, output), encoding="utf-8")
        state = work / "state"
        state.mkdir()
        (state / "manifest.json").write_text(
            json.dumps(deferral_state(project_manifest, upstream_models, database)), encoding="utf-8"
        )
        target = work / "target"
        argv = [
            executable,
            command,
            "--project-dir",
            str(project_dir),
            "--profiles-dir",
            str(work),
            "--target-path",
            str(target),
            "--log-path",
            str(work / "logs"),
            "--no-version-check",
            "--no-use-colors",
            "--select",
            *select,
            "--defer",
            "--state",
            str(state),
            *extra_args,
        ]
        child_env = dict(os.environ if env is None else env)
        child_env.update(secret_env)
        child_env["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "False"
        child_env.pop("DBT_PROFILES_DIR", None)
        # The subprocess must not inherit Airflow's virtualenv as its Python.
        child_env.pop("PYTHONPATH", None)
        child_env.pop("VIRTUAL_ENV", None)
        # dbt-ol starts "dbt" from PATH: the one beside it
        child_env["PATH"] = os.pathsep.join([str(Path(executable).parent), child_env.get("PATH", "")])
        if lineage:
            child_env.update(lineage_env(lineage_parent))
            child_env.setdefault("OPENLINEAGE_DBT_LOGGING", "WARNING")
        log.info("dbt: %s", " ".join(argv))
        with wh.released():
            try:
                proc = subprocess.run(
                    argv,
                    env=child_env,
                    cwd=str(project_dir),
                    shell=False,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    check=False,
                )
            except OSError as exc:
                raise DbtSetupError(f"cannot run {executable}: {exc}") from exc
        for line in proc.stdout.splitlines():
            log.info("[dbt] %s", line)
        for line in proc.stderr.splitlines():
            log.info("[dbt stderr] %s", line)
        # dbt's output names the invocation's temporary folder (profiles, target, logs): say what it is
        output_tail = _tail(proc.stdout + "\n" + proc.stderr).replace(str(work), _WORK_FOLDER)
        results_path = target / "run_results.json"
        if not results_path.is_file():
            raise DbtFailed(f"dbt {command} exited with {proc.returncode} and wrote no results:\n{output_tail}")
        run_results = _read_json(results_path, "dbt run results", f"{_WORK_FOLDER}/target/run_results.json")
        run_manifest_path = target / "manifest.json"
        nodes = (
            _read_json(run_manifest_path, "dbt run manifest", f"{_WORK_FOLDER}/target/manifest.json").get("nodes", {})
            if run_manifest_path.is_file()
            else {}
        )
        results = [_node_result(entry, nodes) for entry in run_results.get("results", [])]
        elapsed = float(run_results.get("elapsed_time") or 0.0)
    return DbtInvocation(argv=argv, returncode=proc.returncode, results=results, output=output_tail, elapsed=elapsed)


def published(table: TableRef) -> dict[str, str]:
    """``{"schema", "name"}`` of a published table, the shape of ``upstream_models`` values."""
    return {"schema": table.schema, "name": table.name}
