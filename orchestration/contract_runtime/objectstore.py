"""Object storage through Airflow's own layer: ``airflow.sdk.ObjectStoragePath`` (fsspec underneath).

Every location is a URI (``s3://bucket/key``, ``gs://…``, ``az://``/``abfs://…``, ``https://…``,
``file:///abs/path``) plus an optional Airflow Connection id. With an id, credentials only ever come from that
Connection: the provider registered for the scheme (``apache-airflow-providers-amazon`` for
``s3``, ``…-google`` for ``gs``, ``…-microsoft-azure`` for ``abfs``/``az``, ``…-http`` for
``https``) builds the filesystem from it; ``file`` is built into Airflow. A named Connection
that does not exist fails before the store is asked anything
(:func:`~contract_runtime.warehouse.require_connection`, a non-retryable
:class:`~contract_runtime.warehouse.WarehouseConfigError` naming the contract, the URI and the
id): the providers would otherwise log a warning and read with the worker's own identity
(environment variables, instance profile). Without an id (``connection_id`` absent from the
contract) the provider's defaults apply, as documented in docs/contract-format.md: for ``s3``
boto's default credential chain, anonymous access when it finds none.

What a URI names (:func:`list_objects`):

- a **glob** when its key has ``*``, ``?`` or ``[`` (fsspec glob, ``**`` recursive);
- a **prefix** when it ends with ``/`` or names a folder: every object below it, recursively,
  except those whose file name starts with ``_`` or ``.`` (``_manifest.json``, ``_SUCCESS``,
  ``.crc`` files are markers, not data);
- else **one object**.

Each object is described by :class:`StoredObject`: its URI (never with user-info), key, size
(bytes), the store's ``ETag`` (or ``md5``/``crc32c``) when it has one, and — once its bytes were
read — their SHA-256. Its *version* (what "already loaded" compares) is the ETag when the store
gives one, else ``sha256:<digest>`` of the content.

Errors: a missing bucket or object, refused credentials or a denied read raise
:class:`ObjectStoreError`, a :class:`~contract_runtime.producers.ProducerError` (a retry does not
fix it) whose message names the contract, the URI and the Connection id and never a secret (the
Connection's password and secret-looking extras, URI user info and query-string credentials
such as a signed URL's signature are masked in the whole message, :func:`mask_secrets`). Other
``OSError`` (network) propagate as :class:`ObjectStoreUnavailable`, so Airflow's retries apply.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from contract_runtime.errors import ProducerError
from contract_runtime.warehouse import WarehouseConfigError, require_connection

__all__ = [
    "ObjectStoreError",
    "ObjectStoreUnavailable",
    "StoredObject",
    "delete_prefix",
    "download",
    "exists",
    "forget_connections",
    "join_uri",
    "list_objects",
    "mask_secrets",
    "read_bytes",
    "storage_path",
    "upload",
    "write_bytes",
]

#: Bytes read per chunk when copying or hashing an object.
_CHUNK: int = 1 << 20
#: Connection extra keys whose values are masked in error messages.
_SECRET_HINTS: tuple[str, ...] = ("secret", "password", "token", "key", "credential", "sas")
#: Connection ids found to exist in this process since the last :func:`forget_connections`.
_KNOWN_CONNECTIONS: set[str] = set()


class ObjectStoreError(ProducerError):
    """An object cannot be listed, read or written for a reason a retry will not fix."""


class ObjectStoreUnavailable(RuntimeError):
    """The store did not answer (network, throttling): retryable."""


@dataclass(frozen=True)
class StoredObject:
    """One object in a store.

    :ivar uri: ``scheme://bucket/key`` (no user-info, no Connection id).
    :ivar key: The key within the bucket (a path for ``file``).
    :ivar size: Size in bytes.
    :ivar etag: The store's ETag (quotes stripped), or None (local files).
    :ivar sha256: SHA-256 (hex) of the content, once read; None before.
    """

    uri: str
    key: str
    size: int
    etag: str | None = None
    sha256: str | None = None

    @property
    def version(self) -> str:
        """What identifies this content of the object: the ETag, else ``sha256:<hex>``."""
        if self.etag:
            return f"etag:{self.etag}"
        return f"sha256:{self.sha256}"

    def record(self) -> dict[str, Any]:
        """JSON-able ``{"uri", "key", "size", "etag", "sha256"}``."""
        return asdict(self)


def _scheme(uri: str) -> str:
    return urllib.parse.urlsplit(uri).scheme.lower()


def forget_connections() -> None:
    """Drop the filesystems Airflow cached per (scheme, Connection id) in this process.

    ``airflow.sdk.io.attach`` keeps one store per scheme and Connection id for the life of the
    process, built from the Connection as it was then. A process that runs many tasks
    (``dag.test()``, a long-lived worker) would keep using rotated keys or an old endpoint; each
    stage calls this first, so it reads the Connection as it is now. (``_STORE_CACHE`` is not
    public API: when it is gone, nothing is dropped.) Whether a named Connection exists is
    asked again too.
    """
    _KNOWN_CONNECTIONS.clear()
    try:
        from airflow.sdk.io import store
    except ImportError:
        return
    cache = getattr(store, "_STORE_CACHE", None)
    if isinstance(cache, dict):
        for alias in [a for a, s in cache.items() if getattr(s, "conn_id", None)]:
            cache.pop(alias, None)


def storage_path(uri: str, conn_id: str | None) -> Any:
    """The ``ObjectStoragePath`` of ``uri`` bound to ``conn_id`` (None: the scheme's default)."""
    from airflow.sdk import ObjectStoragePath

    return ObjectStoragePath(uri, conn_id=conn_id or None)


def join_uri(base: str, *parts: str) -> str:
    """``base`` + ``/`` + parts, without doubled slashes: ``join_uri("s3://b/p/", "x")`` = ``s3://b/p/x``."""
    out = base.rstrip("/")
    for part in parts:
        out = f"{out}/{part.strip('/')}"
    return out


def mask_secrets(text: str, conn_id: str | None) -> str:
    """``text`` with every secret it may quote replaced by ``***``: the Connection's password and
    secret-looking extras (when ``conn_id`` names one), then what
    :func:`contract_runtime.redact.mask_text` masks (URI user info, ``<secret key>=value``
    pairs, query-string credentials such as ``sig=``, ``X-Amz-Signature=``, ``X-Goog-Signature=``).

    Every message this module and the ingestion producers raise passes through here, so a signed
    URL's signature never reaches a task log, an exception or a lineage facet.
    """
    secrets = _connection_secrets(conn_id) if conn_id else []
    for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, "***")
    from contract_runtime.redact import mask_text

    return mask_text(text)


def _connection_secrets(conn_id: str) -> list[str]:
    """The password and secret-looking extras of the Connection ``conn_id``; ``[]`` without one."""
    try:
        from airflow.sdk import BaseHook

        conn = BaseHook.get_connection(conn_id)
    except Exception:  # noqa: BLE001 - no Connection: nothing of its own to mask
        return []
    secrets = [str(conn.password or "")]
    try:
        extra = conn.extra_dejson or {}
    except Exception:  # noqa: BLE001
        extra = {}
    for k, v in extra.items():
        if isinstance(v, str) and any(h in k.lower() for h in _SECRET_HINTS):
            secrets.append(v)
    return secrets


def _require_connection(contract_id: str, action: str, uri: str, conn_id: str | None) -> None:
    """Fail before the store is asked when ``conn_id`` names no Connection (module doc)."""
    if not conn_id or conn_id in _KNOWN_CONNECTIONS:
        return
    try:
        require_connection(conn_id, f"{contract_id}: cannot {action} {uri!r}")
    except WarehouseConfigError as exc:
        raise WarehouseConfigError(mask_secrets(str(exc), None)) from None
    _KNOWN_CONNECTIONS.add(conn_id)


def _fail(contract_id: str, action: str, uri: str, conn_id: str | None, exc: BaseException) -> Exception:
    reason = mask_secrets(f"{type(exc).__name__}: {exc}".strip(), conn_id)
    if isinstance(exc, FileNotFoundError):
        what = "does not exist (no such bucket, container or object)"
    elif isinstance(exc, PermissionError):
        what = "was refused (check the Connection's credentials and the store's permissions)"
    elif isinstance(exc, (OSError, ConnectionError, TimeoutError)) or any(
        word in type(exc).__name__ for word in ("Connect", "Timeout", "Throttl")
    ):
        return ObjectStoreUnavailable(
            mask_secrets(
                f"{contract_id}: cannot {action} {uri!r} with Connection {conn_id!r}: the store did not answer: {reason}",
                None,
            )
        )
    else:
        what = "failed"
    return ObjectStoreError(
        mask_secrets(f"{contract_id}: cannot {action} {uri!r} with Connection {conn_id!r}: {what}: {reason}", None)
    )


@contextmanager
def _errors(contract_id: str, action: str, uri: str, conn_id: str | None) -> Iterator[None]:
    _require_connection(contract_id, action, uri, conn_id)
    try:
        yield
    except (ObjectStoreError, ObjectStoreUnavailable, WarehouseConfigError):
        raise
    except ImportError as exc:
        raise ObjectStoreError(
            mask_secrets(
                f"{contract_id}: cannot {action} {uri!r}: no filesystem for scheme {_scheme(uri)!r} "
                f"(install the Airflow provider that registers it): {exc}",
                conn_id,
            )
        ) from exc
    except ValueError as exc:
        raise ObjectStoreError(
            mask_secrets(f"{contract_id}: cannot {action} {uri!r} with Connection {conn_id!r}: {exc}", conn_id)
        ) from exc
    except Exception as exc:
        raise _fail(contract_id, action, uri, conn_id, exc) from exc


def _etag(info: dict[str, Any]) -> str | None:
    for key in ("ETag", "etag", "md5_checksum", "md5Hash", "content_md5", "crc32c"):
        value = info.get(key)
        if value:
            return str(value).strip('"')
    return None


def _uri_of(scheme: str, fs_path: str) -> str:
    if scheme == "file":
        return "file://" + urllib.parse.quote(fs_path if fs_path.startswith("/") else "/" + fs_path)
    return f"{scheme}://{fs_path.lstrip('/')}"


def _split(scheme: str, fs_path: str) -> str:
    """The key of an fsspec path: everything after the bucket (the whole path for ``file``)."""
    if scheme == "file":
        return fs_path
    return fs_path.lstrip("/").partition("/")[2]


def _is_marker(fs_path: str) -> bool:
    return posixpath.basename(fs_path.rstrip("/")).startswith(("_", "."))


def list_objects(uri: str, conn_id: str | None, *, contract_id: str) -> list[StoredObject]:
    """The objects a URI names (module doc: object, prefix or glob), sorted by URI.

    Listings are never served from a cache: each call asks the store (a second run sees a new
    object).

    :returns: Objects without ``sha256`` (not read yet); ``[]`` for an empty prefix or glob.
    :raises ObjectStoreError: Missing bucket or object, refused credentials.
    :raises ObjectStoreUnavailable: The store did not answer.
    """
    scheme = _scheme(uri)
    with _errors(contract_id, "list", uri, conn_id):
        path = storage_path(uri, conn_id)
        fs = path.fs
        fs.invalidate_cache()
        raw = path.path
        found: dict[str, dict[str, Any]]
        if any(ch in _split(scheme, raw) for ch in "*?["):
            found = {p: fs.info(p) for p in fs.glob(raw)}
            found = {p: i for p, i in found.items() if i.get("type") != "directory"}
        elif uri.endswith("/") or fs.isdir(raw):
            listed = fs.find(raw.rstrip("/"), detail=True)
            found = {p: i for p, i in listed.items() if i.get("type") != "directory"}
            base = raw.rstrip("/")
            found = {p: i for p, i in found.items() if not any(_is_marker(seg) for seg in p[len(base) :].split("/"))}
        else:
            found = {raw: fs.info(raw)}
    objects = [
        StoredObject(uri=_uri_of(scheme, p), key=_split(scheme, p), size=int(i.get("size") or 0), etag=_etag(i))
        for p, i in found.items()
    ]
    # Sort for determinism: stores list in their own order.
    return sorted(objects, key=lambda o: o.uri)


def download(obj: StoredObject, conn_id: str | None, dest_dir: str, *, contract_id: str) -> tuple[str, StoredObject]:
    """Copy an object into ``dest_dir`` and hash it.

    :returns: ``(local file path, the object with sha256 and the size actually read)``.
    :raises ObjectStoreError: The object is gone or its read is denied.
    """
    name = hashlib.sha256(obj.uri.encode("utf-8")).hexdigest()[:16] + "-" + posixpath.basename(obj.key.rstrip("/"))
    local = os.path.join(dest_dir, name)
    digest = hashlib.sha256()
    size = 0
    with (
        _errors(contract_id, "read", obj.uri, conn_id),
        storage_path(obj.uri, conn_id).open("rb") as src,
        open(local, "wb") as dst,
    ):
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            dst.write(chunk)
    return local, StoredObject(obj.uri, obj.key, size, obj.etag, digest.hexdigest())


def read_bytes(uri: str, conn_id: str | None, *, contract_id: str) -> bytes:
    """The whole content of one (small) object, e.g. a manifest."""
    with _errors(contract_id, "read", uri, conn_id):
        data: bytes = storage_path(uri, conn_id).read_bytes()
        return data


def write_bytes(uri: str, conn_id: str | None, data: bytes, *, contract_id: str) -> None:
    """Write one object (parent folders made for ``file``)."""
    with _errors(contract_id, "write", uri, conn_id):
        path = storage_path(uri, conn_id)
        if _scheme(uri) == "file":
            os.makedirs(os.path.dirname(path.path), exist_ok=True)
        path.write_bytes(data)


def upload(local: str, uri: str, conn_id: str | None, *, contract_id: str) -> None:
    """Copy a local file to ``uri``."""
    with _errors(contract_id, "write", uri, conn_id):
        path = storage_path(uri, conn_id)
        if _scheme(uri) == "file":
            os.makedirs(os.path.dirname(path.path), exist_ok=True)
        with open(local, "rb") as src, path.open("wb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)


def exists(uri: str, conn_id: str | None, *, contract_id: str) -> bool:
    """Whether one object exists (asks the store, no cache)."""
    with _errors(contract_id, "read", uri, conn_id):
        path = storage_path(uri, conn_id)
        path.fs.invalidate_cache()
        return bool(path.fs.exists(path.path))


def delete_prefix(uri: str, conn_id: str | None, *, contract_id: str) -> int:
    """Delete every object under a prefix; returns how many there were."""
    with _errors(contract_id, "delete", uri, conn_id):
        path = storage_path(uri.rstrip("/") + "/", conn_id)
        fs = path.fs
        fs.invalidate_cache()
        base = path.path.rstrip("/")
        if not fs.exists(base):
            return 0
        files = [p for p, i in fs.find(base, detail=True).items() if i.get("type") != "directory"]
        for p in files:
            fs.rm_file(p)
        fs.invalidate_cache()
        return len(files)

