"""Reading the compiled manifest (``generated/manifest.json``) at task time (ADR 0002).

The manifest is cached per process by absolute path, and re-read when the file's modification
time or size changes. Imports only the standard library.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

__all__ = [
    "MANIFEST_VERSION",
    "ManifestError",
    "find_dag",
    "load_manifest",
    "project_root",
    "resolve_project_path",
]

#: The only manifest version this runtime reads.
MANIFEST_VERSION: int = 1

_cache: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}
_lock = threading.Lock()


class ManifestError(Exception):
    """The manifest is missing, unreadable, of another version, or lacks the contract."""


def _canonical(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


def load_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load and cache the manifest at ``path``.

    :param path: Path of ``manifest.json`` (generated modules pass ``<dags>/../../manifest.json``).
    :returns: The parsed manifest (a dict; treat it as read-only: it is shared by the cache).
    :raises ManifestError: When the file is missing or not JSON, or ``manifestVersion`` is not
        :data:`MANIFEST_VERSION`.
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
    with _lock:
        _cache[key] = (stamp, data)
    return data


def find_dag(manifest: dict[str, Any], contract_id: str) -> dict[str, Any]:
    """Return the ``dags[]`` entry whose ``dag_id`` is ``contract_id``.

    :param manifest: A manifest from :func:`load_manifest`.
    :param contract_id: The contract id (= dag_id).
    :returns: The DAG entry; its ``runtime`` key is what the stages read.
    :raises ManifestError: When no DAG has that id or its entry has no ``runtime``.
    """
    for dag in manifest.get("dags", []):
        if dag.get("dag_id") == contract_id:
            if not isinstance(dag.get("runtime"), dict):
                raise ManifestError(f"manifest entry for {contract_id!r} has no runtime section")
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
