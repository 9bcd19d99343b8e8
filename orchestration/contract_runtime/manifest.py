"""Reading the compiled manifest (``generated/manifest.json``) at task time (ADR 0002).

The manifest is cached per process by absolute path, and re-read when the file's modification
time or size changes. Each read is checked against the manifest JSON Schema of its version
(``manifest-v2.schema.json``, the compiler's ``compiler/schemas/manifest/v2.schema.json``), so the
stages read only manifests of the shape :mod:`contract_runtime.manifest_types` describes. Then each
``runtime.datasets[]`` entry a task reads is joined to its asset
(:func:`contract_runtime.quality_rules.resolve_datasets`: ``uri``, ``schema`` and the ``quality``
rules the audit runs, which version 2 stores once, on the asset; ADR 0017f). A task
passes its contract id and has checked only what it reads (:func:`task_view`): checking a whole
1,000-contract manifest took about 15 s per task, since every Airflow task is a new process. It
also parses only that part (:mod:`contract_runtime.manifest_slice`, ADR 0017h), and gets back
only that part: parsing the whole 18 MB file took about 0.4 s per task.
Imports only the standard library at import time (``jsonschema`` when a manifest is read).
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from contract_runtime import __version__ as RUNTIME_VERSION
from contract_runtime.manifest_slice import task_names, task_slice, task_view
from contract_runtime.manifest_types import DagPlan, Manifest
from contract_runtime.quality_rules import resolve_datasets

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "MANIFEST_VERSION",
    "ManifestError",
    "compiler_version_problem",
    "find_dag",
    "load_manifest",
    "project_root",
    "resolve_project_path",
    "schema_problem",
    "task_names",
    "task_view",
]

#: The only manifest version this runtime reads (the DAG modules and the manifest are generated together).
MANIFEST_VERSION: int = 2

#: The manifest JSON Schema of :data:`MANIFEST_VERSION` (a link to the compiler's copy).
MANIFEST_SCHEMA: Path = Path(__file__).with_name("manifest-v2.schema.json")

_cache: dict[tuple[str, str | None], tuple[tuple[int, int], Manifest]] = {}
_lock = threading.Lock()
_validator: Validator | None = None


class ManifestError(Exception):
    """The manifest is missing, unreadable, of another version, or lacks the contract."""


def _canonical(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


def _schema_validator() -> Validator:
    global _validator
    if _validator is None:
        from jsonschema import Draft202012Validator

        schema = json.loads(MANIFEST_SCHEMA.read_text(encoding="utf-8"))
        _validator = cast("Validator", Draft202012Validator(schema))
    return _validator


def _echo(error: ValidationError) -> bool:
    # An ``if``/``then`` failure and the unevaluated-properties error beside it only repeat what
    # the failing branch reports at the field itself.
    return error.validator in ("if", "unevaluatedProperties")


def _leaves(errors: list[ValidationError]) -> list[ValidationError]:
    out: list[ValidationError] = []
    for e in errors:
        out.append(e)
        if e.context:
            out.extend(_leaves(list(e.context)))
    return out


def schema_problem(data: Any) -> str | None:
    """The first problem of ``data`` against the manifest schema, or None when it is valid.

    :param data: A parsed manifest.
    :returns: ``"<JSON pointer>: <message>"`` naming the offending field (the deepest error;
        ``dags/<i>`` is followed by the dag_id), like the compiler's ``checkManifest``.
    """
    errors = _leaves(list(_schema_validator().iter_errors(data)))
    if not errors:
        return None
    best = max(errors, key=lambda e: (len(e.absolute_path), not _echo(e)))
    parts = [str(p) for p in best.absolute_path]
    where = "/" + "/".join(parts)
    if len(parts) >= 2 and parts[0] == "dags" and isinstance(data, dict):
        try:
            where += f" (dag_id {data['dags'][int(parts[1])]['dag_id']!r})"
        except (KeyError, IndexError, TypeError, ValueError):
            pass
    return f"{where}: {best.message}"


def _in_file(problem: str, positions: dict[str, list[int]]) -> str:
    """``problem``'s pointer ``/dags/<k>`` or ``/assets/<k>`` into a view, as the file's index."""
    match = re.match(r"/(dags|assets)/(\d+)(.*)", problem, re.DOTALL)
    if match is None or match.group(1) not in positions or int(match.group(2)) >= len(positions[match.group(1)]):
        return problem
    return f"/{match.group(1)}/{positions[match.group(1)][int(match.group(2))]}{match.group(3)}"


def _major_minor(version: str) -> tuple[str, str] | None:
    parts = version.split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return parts[0], parts[1]


def compiler_version_problem(compiler_version: object, runtime_version: str = RUNTIME_VERSION) -> str | None:
    """Whether this runtime runs the DAGs of a compiler version (ADR 0018, docs/deploy.md).

    The compiler and the runtime share one version number; a runtime runs what a compiler of the
    same MAJOR.MINOR wrote (patch releases of either side mix freely).

    :param compiler_version: The manifest's ``compiler.version``.
    :param runtime_version: This runtime's version (``contract_runtime.__version__``).
    :returns: None when they fit, else one sentence naming both versions and what to install.
    """
    ours = _major_minor(runtime_version)
    theirs = _major_minor(compiler_version) if isinstance(compiler_version, str) else None
    if ours is not None and theirs == ours:
        return None
    wanted = f"{theirs[0]}.{theirs[1]}.0" if theirs else str(compiler_version)
    return (
        f"the DAGs were generated by contract-assets {compiler_version}, but this worker runs "
        f"contract-runtime {runtime_version}, which runs the DAGs of contract-assets "
        f"{ours[0] if ours else '?'}.{ours[1] if ours else '?'}.x only: install "
        f'"contract-runtime~={wanted}" in the Airflow image, or recompile with contract-assets '
        f"{runtime_version} (docs/deploy.md)"
    )


def load_manifest(path: str | os.PathLike[str], contract_id: str | None = None) -> Manifest:
    """Load, check and cache the manifest at ``path``.

    :param path: Path of ``manifest.json`` (generated modules pass ``<dags>/../../manifest.json``).
    :param contract_id: The task's contract id: only what its tasks read is parsed and checked
        against the schema (:func:`task_view`; read from the file's records by
        :func:`contract_runtime.manifest_slice.task_slice` when the file is in the compiler's
        layout, else from the whole parsed file, ADR 0017h). None reads and checks the whole
        manifest.
    :returns: The manifest; with the ``contract_id`` of a ``dags[]`` entry, its
        :func:`task_view` (treat either as read-only: it is shared by the cache). The
        ``runtime.datasets[]`` entries of the DAGs its tasks read (every DAG when ``contract_id``
        is None) are joined to their assets: each also has ``uri``, ``schema`` and ``quality``
        (the rules the audit runs, :func:`contract_runtime.quality_rules.runtime_quality`).
    :raises ManifestError: When the file is missing or not JSON, ``manifestVersion`` is not
        :data:`MANIFEST_VERSION`, the compiler that wrote it is of another MAJOR.MINOR than this
        runtime (:func:`compiler_version_problem`, both versions named), or it does not match the
        manifest schema (the message names the offending field by its path).
    """
    key = _canonical(path)
    try:
        st = os.stat(key)
    except OSError as exc:
        raise ManifestError(f"manifest {key!r} cannot be read: {exc.strerror or exc}") from exc
    stamp = (st.st_mtime_ns, st.st_size)
    with _lock:
        hit = _cache.get((key, contract_id))
        if hit is not None and hit[0] == stamp:
            return hit[1]
    sliced = task_slice(key, contract_id) if contract_id is not None else None
    if sliced is not None:
        data: Any = sliced.view
    else:
        try:
            with open(key, encoding="utf-8") as fh:
                data = json.load(fh)
        # RecursionError: nested deeper than the json module decodes (a damaged or hand-made
        # file: the compiler writes at most 128 levels, ADR 0019).
        except (OSError, ValueError, RecursionError) as exc:
            raise ManifestError(f"manifest {key!r} is not readable JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ManifestError(f"manifest {key!r} is not a JSON object")
    version = data.get("manifestVersion")
    if version == 1:
        raise ManifestError(
            f"manifest {key!r} has manifestVersion 1, which stored each dataset's schema and quality rules "
            f"twice; this runtime reads version {MANIFEST_VERSION} only: recompile the project "
            f"(contract-assets compile) and deploy the new generated/ folder"
        )
    if version != MANIFEST_VERSION:
        raise ManifestError(
            f"manifest {key!r} has manifestVersion {version!r}; this runtime reads version "
            f"{MANIFEST_VERSION} only (recompile with a matching compiler, or upgrade contract_runtime)"
        )
    # Before the schema: a newer compiler's manifest may hold fields this runtime's schema refuses,
    # and the version is what the user must fix. A missing version is the schema's to report.
    compiler = data.get("compiler")
    written_by = compiler.get("version") if isinstance(compiler, dict) else None
    mismatch = compiler_version_problem(written_by) if isinstance(written_by, str) else None
    if mismatch is not None:
        raise ManifestError(f"manifest {key!r}: {mismatch}")
    if contract_id is None:
        problem = schema_problem(data)
    elif sliced is not None:
        view = data
        problem = schema_problem(view)
        problem = _in_file(problem, sliced.positions()) if problem is not None else None
    else:
        view, positions = task_view(data, contract_id)
        problem = schema_problem(view)
        problem = _in_file(problem, positions) if problem is not None else None
        # A contract's task gets its view; a task with no dags[] entry (the freshness monitor,
        # whose lineage names each watched asset as the DAG producing it does) the whole file.
        if view.get("dags"):
            data = view
    if problem is not None:
        raise ManifestError(f"manifest {key!r} does not match the manifest schema at {problem} (recompile)")
    # What is returned joins every DAG it holds: the whole file (no contract id, or the monitor's
    # task, kept whole above) or the task's view (the DAGs its tasks read).
    _join_datasets(key, data)
    manifest = cast(Manifest, data)
    with _lock:
        _cache[(key, contract_id)] = (stamp, manifest)
    return manifest


def _join_datasets(key: str, data: dict[str, Any]) -> None:
    """Joins the runtime datasets of every DAG of ``data`` to their assets (:func:`resolve_datasets`)."""
    assets = {a["name"]: a for a in data["assets"]}
    for dag in data["dags"]:
        try:
            resolve_datasets(assets, dag)
        except KeyError as exc:
            raise ManifestError(
                f"manifest {key!r}: the DAG {dag['dag_id']!r} produces {exc.args[0]!r}, which assets[] does not hold with a schema (recompile)"
            ) from exc


def find_dag(manifest: Manifest, contract_id: str) -> DagPlan:
    """Return the ``dags[]`` entry whose ``dag_id`` is ``contract_id``.

    :param manifest: A manifest from :func:`load_manifest`.
    :param contract_id: The contract id (= dag_id).
    :returns: The DAG entry; its ``runtime`` key is what the stages read.
    :raises ManifestError: When no DAG has that id.
    """
    for dag in manifest["dags"]:
        if dag["dag_id"] == contract_id:
            return dag
    raise ManifestError(f"contract {contract_id!r} is not in the manifest (is the DAG module stale? recompile)")


def project_root(manifest_path: str | os.PathLike[str]) -> Path:
    """The project root: the parent of the folder holding ``manifest.json``.

    :param manifest_path: Path of the manifest.
    :returns: An absolute path (symlinks resolved).
    """
    return Path(_canonical(manifest_path)).parent.parent


def resolve_project_path(manifest_path: str | os.PathLike[str], relative: str) -> Path:
    """Resolve a project-relative path from the manifest (``sample_data`` for instance).

    :param manifest_path: Path of the manifest.
    :param relative: A relative POSIX path such as ``orchestration/sample_data/x.csv``.
    :returns: The absolute path inside the project.
    :raises ManifestError: When ``relative`` is absolute or leaves the project root.
    """
    root = project_root(manifest_path)
    if os.path.isabs(relative):
        raise ManifestError(f"project path {relative!r} must be relative to the project root")
    target = Path(os.path.realpath(root / relative))
    if target != root and root not in target.parents:
        raise ManifestError(f"project path {relative!r} leaves the project root")
    return target
