"""The ``command`` producer: run the shim's argument list from the manifest, without a shell.

``runtime.producer.command`` is the full argv (the family's command from the orchestration
config plus the contract's ``args``); ``runtime.producer.env`` is the family's environment. The
process runs with ``subprocess`` (``shell=False``), in the project root, with this environment:

``os.environ`` < ``producer.env`` < the run variables (later wins):

=====================================  =========================================================
``CONTRACT_ASSETS_CONTRACT_ID``        the contract id
``CONTRACT_ASSETS_DAG_ID`` ...         the run identity (:meth:`RunIdentity.as_env`)
``CONTRACT_ASSETS_MANIFEST``           absolute path of ``manifest.json``
``CONTRACT_ASSETS_PROJECT_ROOT``       the project root
``CONTRACT_ASSETS_PARAMS``             ``producer.params`` as JSON
``CONTRACT_ASSETS_WAREHOUSE_KIND``     ``duckdb``, ``postgres``, ...
``CONTRACT_ASSETS_WAREHOUSE_PATH``     the DuckDB file (DuckDB only)
``CONTRACT_ASSETS_WAREHOUSE_CONN_ID``  the Airflow connection id (server databases)
``CONTRACT_ASSETS_STAGING_TABLES``     JSON ``{dataset: {"schema", "name", "sql"}}``
``CONTRACT_ASSETS_STAGING_<DATASET>``  the quoted staging identifier of each dataset
                                       (dataset name upper-cased)
``CONTRACT_ASSETS_PARTITION_KEY``      a partitioned contract's key (``2026-04-15``), and
``CONTRACT_ASSETS_PARTITION_START``    its bounds [start, end), ISO 8601 UTC
``CONTRACT_ASSETS_PARTITION_END``      (unset for an unpartitioned contract)
=====================================  =========================================================

No credentials are added: a shim that needs them resolves the connection id itself.
A non-zero exit fails the task with the last lines of stderr. While the process runs, the
embedded DuckDB file is released so the process can open it.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Mapping
from typing import Any

from contract_runtime.manifest import project_root
from contract_runtime.partitions import partition_of
from contract_runtime.producers import ProduceRequest, ProducerError

__all__ = ["STDERR_TAIL_LINES", "CommandFailed", "build_env", "produce", "run_command"]

log = logging.getLogger(__name__)

#: How many trailing stderr lines a failure message carries.
STDERR_TAIL_LINES: int = 20
_STDERR_TAIL_CHARS: int = 4000


class CommandFailed(RuntimeError):
    """The producer command exited non-zero (retryable: the task's retries apply)."""


def build_env(request: ProduceRequest, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The producer process environment (see the module doc for the precedence).

    :param base: The inherited environment; ``os.environ`` when None.
    """
    env = dict(os.environ if base is None else base)
    producer = request.runtime["producer"]
    for key, value in (producer.get("env") or {}).items():
        env[str(key)] = str(value)
    env.update(request.run.as_env())
    env.update(request.warehouse.env())
    env["CONTRACT_ASSETS_CONTRACT_ID"] = request.contract_id
    env["CONTRACT_ASSETS_MANIFEST"] = os.path.realpath(request.manifest_path)
    env["CONTRACT_ASSETS_PROJECT_ROOT"] = str(project_root(request.manifest_path))
    env["CONTRACT_ASSETS_PARAMS"] = json.dumps(producer.get("params") or {}, sort_keys=True)
    env["CONTRACT_ASSETS_STAGING_TABLES"] = json.dumps(
        {name: table.as_dict() for name, table in request.staging.items()}, sort_keys=True
    )
    for name, table in request.staging.items():
        env[f"CONTRACT_ASSETS_STAGING_{name.upper()}"] = table.sql
    partition = partition_of(request.dag, request.run.partition_key)
    if partition is not None:
        # the run's partition (docs/contract-format.md "Partitions"): ISO 8601 UTC bounds, [start, end)
        env["CONTRACT_ASSETS_PARTITION_KEY"] = partition.key
        env["CONTRACT_ASSETS_PARTITION_START"] = partition.start.isoformat()
        env["CONTRACT_ASSETS_PARTITION_END"] = partition.end.isoformat()
    return env


def _tail(text: str) -> str:
    lines = text.strip().splitlines()[-STDERR_TAIL_LINES:]
    tail = "\n".join(lines)
    return tail[-_STDERR_TAIL_CHARS:]


def run_command(argv: list[str], env: Mapping[str, str], cwd: str | None) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` without a shell and capture its output.

    :raises ProducerError: When the program is not found or not executable (no retry helps).
    :raises CommandFailed: When it exits non-zero (message: the exit code and the tail of
        stderr).
    """
    if not argv or not all(isinstance(a, str) for a in argv):
        raise ProducerError(f"command must be a non-empty list of strings, got {argv!r}")
    try:
        proc = subprocess.run(
            argv,
            env=dict(env),
            cwd=cwd,
            shell=False,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError as exc:
        raise ProducerError(f"command {argv[0]!r} not found (PATH={env.get('PATH', '')!r})") from exc
    except PermissionError as exc:
        raise ProducerError(f"command {argv[0]!r} is not executable: {exc}") from exc
    for line in proc.stdout.splitlines():
        log.info("[%s] %s", os.path.basename(argv[0]), line)
    for line in proc.stderr.splitlines():
        log.info("[%s stderr] %s", os.path.basename(argv[0]), line)
    if proc.returncode != 0:
        raise CommandFailed(
            f"command {argv[0]!r} exited with {proc.returncode}; stderr (last lines):\n{_tail(proc.stderr)}"
        )
    return proc


def produce(request: ProduceRequest) -> dict[str, Any]:
    """Run the command; it must create every dataset's staging table.

    :returns: ``{"command": argv[0], "returncode": 0}`` (the staging check is the stage's).
    """
    argv = request.runtime["producer"].get("command")
    if not isinstance(argv, list):
        raise ProducerError(f"{request.contract_id}: producer.command is not an argument list in the manifest")
    env = build_env(request)
    log.info("command producer %s: %s", request.contract_id, argv)
    with request.warehouse.released():
        run_command([str(a) for a in argv], env, str(project_root(request.manifest_path)))
    return {"command": str(argv[0]), "returncode": 0}
