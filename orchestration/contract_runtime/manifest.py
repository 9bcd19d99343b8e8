"""Reading the compiled manifest (``generated/manifest.json``) at task time (ADR 0002).

The manifest is cached per process by absolute path, and re-read when the file's modification
time or size changes. Each read is checked against the manifest JSON Schema of its version
(``manifest-v1.schema.json``, the compiler's ``compiler/schemas/manifest/v1.schema.json``), so the
stages read only manifests of the shape :mod:`contract_runtime.manifest_types` describes.
Imports only the standard library at import time (``jsonschema`` when a manifest is read).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from contract_runtime.manifest_types import DagPlan, Manifest

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "MANIFEST_VERSION",
    "ManifestError",
    "find_dag",
    "load_manifest",
    "project_root",
    "resolve_project_path",
    "schema_problem",
]

#: The only manifest version this runtime reads.
MANIFEST_VERSION: int = 1

#: The manifest JSON Schema of :data:`MANIFEST_VERSION` (a link to the compiler's copy).
MANIFEST_SCHEMA: Path = Path(__file__).with_name("manifest-v1.schema.json")

_cache: dict[str, tuple[tuple[int, int], Manifest]] = {}
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


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Load, check and cache the manifest at ``path``.

    :param path: Path of ``manifest.json`` (generated modules pass ``<dags>/../../manifest.json``).
    :returns: The parsed manifest (treat it as read-only: it is shared by the cache).
    :raises ManifestError: When the file is missing or not JSON, ``manifestVersion`` is not
        :data:`MANIFEST_VERSION`, or it does not match the manifest schema (the message names the
        offending field by its path).
    """
    key = _canonical(path)
    try:
        st = os.stat(key)
    except OSError as exc:
        raise ManifestError(f"manifest {key!r} cannot be read: {exc.strerror or exc}") from exc
    stamp = (st.st_mtime_ns, st.st_size)
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
    try:
        with open(key, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ManifestError(f"manifest {key!r} is not readable JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ManifestError(f"manifest {key!r} is not a JSON object")
    version = data.get("manifestVersion")
    if version != MANIFEST_VERSION:
        raise ManifestError(
            f"manifest {key!r} has manifestVersion {version!r}; this runtime reads version "
            f"{MANIFEST_VERSION} only (recompile with a matching compiler, or upgrade contract_runtime)"
        )
    problem = schema_problem(data)
    if problem is not None:
        raise ManifestError(f"manifest {key!r} does not match the manifest schema at {problem} (recompile)")
    manifest = cast(Manifest, data)
    with _lock:
        _cache[key] = (stamp, manifest)
    return manifest


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
