"""Dataset identities in lineage (DESIGN §6.3).

A dataset's OpenLineage ``namespace``/``name`` is its *physical* location under the OpenLineage
naming rules, so that other emitters (the Airflow provider, Spark, dbt) that touch the same table
produce the same identity and their events join ours. The contract's logical identity, the
Airflow Asset, rides along as a ``symlinks`` identifier of type ``ASSET``.

Resolution order for a dataset the runtime produced:

0. an Asset URI the Airflow OpenLineage provider converts (``postgres://``, ``file://``, ``s3://``,
   ``gs://``): named exactly as the provider names that Asset (:func:`asset_dataset`), so our
   events and the provider's meet in one dataset;
1. ``physical: {namespace, name}`` declared on the contract's dataset (compiled into the manifest);
2. else the warehouse the runtime wrote to: ``namespace`` = the ``warehouse_namespace`` the caller
   passes (see :func:`sql_warehouse_namespace`, :func:`duckdb_warehouse_namespace`), default the
   manifest's lineage namespace; ``name`` = ``[warehouse_database.]table``, where ``table`` is the
   ``schema.table`` the caller passes, default the Asset name (the runtime stores Asset
   ``<domain>.<name>`` as table ``<domain>.<name>``; the bundled SQL relies on it).

An external Asset is named like the provider names it (:func:`asset_dataset`); a URI of another
scheme that names a real location (``hdfs://nn/x``) by that URI (:func:`uri_identity`); one with a
logical ``x-`` scheme is read from the warehouse like a produced one.

Every namespace leaves here without URI user-info.
"""

from __future__ import annotations

import functools
import os
import posixpath
import sys
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from contract_runtime.redact import strip_userinfo

__all__ = [
    "PROVIDER_CONVERTED_SCHEMES",
    "asset_dataset",
    "asset_symlink",
    "dataset_identity",
    "duckdb_warehouse_namespace",
    "equivalent_asset_dataset",
    "provider_asset_dataset",
    "sql_warehouse_namespace",
    "upstream_identity",
    "uri_identity",
]

#: Default ports added to a namespace when the connection URI omits them (OpenLineage naming
#: spells ``host:port`` explicitly so two emitters agree).
_DEFAULT_PORTS: dict[str, int] = {
    "postgres": 5432,
    "mysql": 3306,
    "redshift": 5439,
    "mssql": 1433,
    "trino": 8080,
    "oracle": 1521,
}
#: Connection-URI schemes (SQLAlchemy and Airflow spellings) mapped to OpenLineage schemes.
_SCHEME_ALIASES: dict[str, str] = {
    "postgresql": "postgres",
    "postgresql+psycopg2": "postgres",
    "postgresql+psycopg": "postgres",
    "mysql+pymysql": "mysql",
    "mysql+mysqldb": "mysql",
    "mssql+pyodbc": "mssql",
    "sqlserver": "mssql",
}
#: Object stores whose OpenLineage dataset name is the object key without a leading slash.
_OBJECT_STORE_SCHEMES: frozenset[str] = frozenset(
    {"s3", "s3a", "s3n", "gs", "gcs", "abfss", "wasbs", "az"}
)


def sql_warehouse_namespace(connection_uri: str) -> str:
    """OpenLineage namespace of a SQL server from its connection URI.

    ``postgresql://user:pw@db.internal/analytics`` gives ``postgres://db.internal:5432``: scheme
    normalised, user-info, path and query dropped, default port made explicit.

    :param connection_uri: A SQLAlchemy- or Airflow-style connection URI.
    :returns: ``<scheme>://<host>:<port>``; the URI without user-info when it has no host.
    """
    parts = urlsplit(connection_uri)
    scheme = _SCHEME_ALIASES.get(parts.scheme.lower(), parts.scheme.lower())
    host = parts.hostname
    if not host:
        return strip_userinfo(connection_uri)
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or _DEFAULT_PORTS.get(scheme)
    authority = f"[{host}]" if ":" in host else host
    return f"{scheme}://{authority}:{port}" if port else f"{scheme}://{authority}"


def duckdb_warehouse_namespace(database_file: str) -> str:
    """OpenLineage namespace of an embedded DuckDB warehouse.

    :param database_file: Path of the DuckDB file (made absolute, POSIX separators).
    :returns: ``duckdb://<absolute path>``, e.g. ``duckdb:///srv/warehouse.duckdb``. The matching
        dataset name is ``<file stem>.<schema>.<table>``: DuckDB names the catalog after the file.
    """
    path = posixpath.normpath(str(database_file).replace("\\", "/"))
    if not path.startswith("/"):
        path = posixpath.normpath(os.path.abspath(database_file).replace("\\", "/"))
    return f"duckdb://{path}"


def dataset_identity(
    lineage_namespace: str, entry: Mapping[str, Any]
) -> tuple[str, str]:
    """Physical ``(namespace, name)`` of a dataset the runtime produced or audited.

    :param lineage_namespace: The manifest's ``lineage.namespace`` (the default namespace).
    :param entry: A mapping with ``asset`` and optionally ``uri`` (the Asset URI),
        ``physical: {namespace, name}``,
        ``table`` (``schema.table``), ``warehouse_namespace`` and ``warehouse_database``: a
        manifest dataset, an output dict of :func:`~contract_runtime.lineage.emit_complete`, or
        both merged.
    :returns: The namespace (without user-info) and name.
    :raises KeyError: When ``entry`` has neither ``physical``, ``table`` nor ``asset``.
    """
    uri = entry.get("uri")
    if isinstance(uri, str) and uri and (converted := asset_dataset(uri)) is not None:
        return strip_userinfo(converted[0]), converted[1]
    physical = entry.get("physical")
    if (
        isinstance(physical, Mapping)
        and physical.get("namespace")
        and physical.get("name")
    ):
        return strip_userinfo(str(physical["namespace"])), str(physical["name"])
    namespace = str(entry.get("warehouse_namespace") or lineage_namespace)
    table = str(entry.get("table") or entry["asset"])
    database = entry.get("warehouse_database")
    name = f"{database}.{table}" if database else table
    return strip_userinfo(namespace), name


def uri_identity(uri: str) -> tuple[str, str] | None:
    """OpenLineage ``(namespace, name)`` of a location URI, or None for a logical URI.

    ``s3://bucket/a/b`` gives ``("s3://bucket", "a/b")``; ``hdfs://nn:8020/x`` gives
    ``("hdfs://nn:8020", "/x")``; a database table URI (Airflow's form) gives the OpenLineage
    table name: ``postgres://db:5432/billing/public/t`` gives ``("postgres://db:5432",
    "billing.public.t")``; ``file:///abs/path`` gives ``("file", "/abs/path")``. URIs with an ``x-`` scheme or without an authority name no
    physical location and give None.

    :param uri: An Asset URI.
    :returns: The identity, or None.
    """
    try:
        parts = urlsplit(strip_userinfo(uri))
    except ValueError:
        return None
    if parts.scheme.lower() == "file" and parts.netloc in ("", "localhost") and parts.path:
        return "file", unquote(parts.path)
    scheme = _SCHEME_ALIASES.get(parts.scheme.lower(), parts.scheme.lower())
    if not scheme or scheme.startswith("x-") or not parts.netloc:
        return None
    if scheme in _DEFAULT_PORTS:
        # Airflow's database Asset URIs (postgres://host:port/db/schema/table) name a table;
        # OpenLineage names it {database}.{schema}.{table} in postgres://{host}:{port}.
        segments = [s for s in (parts.path or "").split("/") if s]
        namespace = sql_warehouse_namespace(f"{scheme}://{parts.netloc}")
        return namespace, ".".join(segments) or "/"
    path = parts.path or "/"
    name = path.lstrip("/") if scheme in _OBJECT_STORE_SCHEMES else path
    return f"{scheme}://{parts.netloc}", name or "/"


#: Schemes whose Airflow provider converts an Asset to an OpenLineage dataset (AIP-60), and the
#: provider that does: ``apache-airflow-providers-<name>``'s ``assets/<scheme>.py``
#: ``convert_asset_to_openlineage``. :func:`equivalent_asset_dataset` mirrors each one.
PROVIDER_CONVERTED_SCHEMES: dict[str, str] = {
    "postgres": "postgres",
    "postgresql": "postgres",
    "file": "common-io",
    "s3": "amazon",
    "gs": "google",
}

_NO_PROVIDER = object()

#: The provider module whose ``translate_airflow_asset`` is reused when it is loaded.
PROVIDER_UTILS_MODULE = "airflow.providers.openlineage.utils.utils"


def provider_asset_dataset(uri: str, extra: Mapping[str, Any] | None = None) -> Any:
    """The identity the Airflow OpenLineage provider gives an Asset, by its own code.

    Calls ``airflow.providers.openlineage.utils.utils.translate_airflow_asset`` on
    ``airflow.sdk.Asset(uri=uri)``: Airflow sanitises the URI, the scheme's provider normalises it
    and converts it. That is what the provider puts into its own task events for the Asset.

    Only when the provider's module is already loaded in the process (it is whenever its listener
    is active, i.e. whenever the provider emits events that ours must meet): importing it costs
    seconds in a task process, inside the emit bound, and loading it mid-run changes what
    :func:`~contract_runtime.lineage.runid.dag_run_id` reads (see that module).

    :returns: ``(namespace, name)``; None when the provider has no converter for the scheme (or
        refuses the URI); the module's ``_NO_PROVIDER`` marker when the provider is not loaded.
    """
    utils = sys.modules.get(PROVIDER_UTILS_MODULE)
    sdk = sys.modules.get("airflow.sdk")
    if utils is None or sdk is None:
        return _NO_PROVIDER
    translate_airflow_asset = utils.translate_airflow_asset
    Asset = sdk.Asset
    try:
        dataset = translate_airflow_asset(Asset(uri=uri, extra=dict(extra or {})), None)
    except Exception:  # noqa: BLE001 - Airflow refuses the URI: the provider names nothing either
        return None
    if dataset is None:
        return None
    return str(dataset.namespace), str(dataset.name)


def equivalent_asset_dataset(uri: str) -> tuple[str, str] | None:
    """The providers' Asset-to-OpenLineage conversion for :data:`PROVIDER_CONVERTED_SCHEMES`,
    without Airflow: Airflow's URI sanitising (``_sanitize_uri``: scheme lower-cased, trailing
    ``/`` dropped, empty path ``/``), the scheme's normaliser, then its converter:

    * ``postgres``/``postgresql``: the default port 5432 added, an empty schema named ``default``;
      ``postgres://<host>:<port>`` and ``<database>.<schema>.<table>`` (postgres provider);
    * ``file``: ``file`` (no host) or ``file://<host>``, and the path; ``file://x.csv`` (no path)
      names ``/x.csv`` (common-io provider);
    * ``s3`` / ``gs``: ``<scheme>://<bucket>`` and the key, ``/`` for none (amazon, google).

    :returns: ``(namespace, name)``, or None for another scheme or a URI the provider refuses.
    """
    try:
        parts = urlsplit(strip_userinfo(uri))
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    path = parts.path.rstrip("/") or "/"
    netloc = parts.netloc
    if scheme in ("postgres", "postgresql"):
        host = netloc.rstrip(":")
        if not host:
            return None
        try:
            port = parts.port
        except ValueError:
            return None
        segments = path.split("/")
        if len(segments) != 4:
            return None
        _, database, schema, table = segments
        authority = host if port is not None else f"{host}:5432"
        return f"postgres://{authority}", f"{database}.{schema or 'default'}.{table}"
    if scheme == "file":
        if not path:
            return None
        if path == "/":
            return "file", netloc if netloc.startswith("/") else "/" + netloc
        return (f"file://{netloc}" if netloc else "file"), path
    if scheme in ("s3", "gs"):
        if not netloc:
            return None
        key = path.lstrip("/")
        return f"{scheme}://{netloc}", key or "/"
    return None


@functools.lru_cache(maxsize=1024)
def _provider_asset_dataset(uri: str) -> Any:
    return provider_asset_dataset(uri)


def asset_dataset(uri: str) -> tuple[str, str] | None:
    """The OpenLineage dataset the Airflow OpenLineage provider makes of an Asset URI, so our
    events and the provider's name one dataset one way (one node in a lineage graph).

    The provider's own conversion when it is loaded and has a converter for the scheme
    (:func:`provider_asset_dataset`); else the tested equivalent (:func:`equivalent_asset_dataset`,
    asserted equal to the installed providers by the tests) for providers not loaded or not
    installed. None for other schemes (``x-`` logical
    URIs among them): the provider names no dataset for them.
    """
    provided = (
        _provider_asset_dataset(uri)
        if PROVIDER_UTILS_MODULE in sys.modules
        else _NO_PROVIDER
    )
    if provided is not _NO_PROVIDER and provided is not None:
        return cast("tuple[str, str]", provided)
    return equivalent_asset_dataset(uri)


def asset_symlink(
    lineage_namespace: str, asset_name: str, asset_uri: str | None
) -> dict[str, str]:
    """The Airflow Asset as an OpenLineage symlink identifier.

    :param lineage_namespace: Used as the namespace when the URI has no authority.
    :param asset_name: The Asset name (``<domain>.<dataset>``), unique across the corpus.
    :param asset_uri: The Asset URI; its ``scheme://authority`` is the namespace
        (``x-datalake://curated``), so the identifier also says where the Asset lives.
    :returns: ``{"namespace", "name", "type": "ASSET"}``.
    """
    namespace = lineage_namespace
    if asset_uri:
        try:
            parts = urlsplit(strip_userinfo(asset_uri))
        except ValueError:
            parts = None
        if parts is not None and parts.scheme and parts.netloc:
            namespace = f"{parts.scheme.lower()}://{parts.netloc}"
    return {"namespace": namespace, "name": asset_name, "type": "ASSET"}


def upstream_identity(
    manifest: Mapping[str, Any], asset_name: str, warehouse: Mapping[str, Any]
) -> tuple[str, str]:
    """Physical identity of an upstream Asset the DAG reads.

    :param manifest: The compiled manifest (``dags[]``, ``assets[]``, ``lineage``).
    :param asset_name: The upstream Asset name.
    :param warehouse: ``warehouse_namespace`` / ``warehouse_database`` of this run's warehouse
        (the upstream is read from the same warehouse unless it declares ``physical`` or names a
        real location).
    :returns: ``(namespace, name)``.
    """
    lineage_namespace = str(manifest["lineage"]["namespace"])
    for dag in manifest.get("dags", []):
        for dataset in dag.get("runtime", {}).get("datasets", []):
            if dataset.get("asset") == asset_name:
                return dataset_identity(lineage_namespace, {**warehouse, **dataset})
    asset = next(
        (a for a in manifest.get("assets", []) if a.get("name") == asset_name), None
    )
    uri = str((asset or {}).get("uri") or "")
    if uri and (converted := asset_dataset(uri)) is not None:
        return strip_userinfo(converted[0]), converted[1]
    if uri and (located := uri_identity(uri)) is not None:
        return located
    return dataset_identity(lineage_namespace, {**warehouse, "asset": asset_name})
