"""Dataset identities in lineage (DESIGN §6.3).

A dataset's OpenLineage ``namespace``/``name`` is its *physical* location under the OpenLineage
naming rules, so that other emitters (the Airflow provider, Spark, dbt) that touch the same table
produce the same identity and their events join ours. The contract's logical identity, the
Airflow Asset, rides along as a ``symlinks`` identifier of type ``ASSET``.

Resolution order for a dataset the runtime produced:

1. ``physical: {namespace, name}`` declared on the contract's dataset (compiled into the manifest);
2. else the warehouse the runtime wrote to: ``namespace`` = the ``warehouse_namespace`` the caller
   passes (see :func:`sql_warehouse_namespace`, :func:`duckdb_warehouse_namespace`), default the
   manifest's lineage namespace; ``name`` = ``[warehouse_database.]table``, where ``table`` is the
   ``schema.table`` the caller passes, default the Asset name (the runtime stores Asset
   ``<domain>.<name>`` as table ``<domain>.<name>``; the bundled SQL relies on it).

An external Asset whose URI names a real location (``s3://bucket/key``) is identified by that URI
(:func:`uri_identity`); one with a logical ``x-`` scheme is read from the warehouse like a produced
one.

Every namespace leaves here without URI user-info.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from contract_runtime.lineage.redact import strip_userinfo

__all__ = [
    "asset_symlink",
    "dataset_identity",
    "duckdb_warehouse_namespace",
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
    :param entry: A mapping with ``asset`` and optionally ``physical: {namespace, name}``,
        ``table`` (``schema.table``), ``warehouse_namespace`` and ``warehouse_database``: a
        manifest dataset, an output dict of :func:`~contract_runtime.lineage.emit_complete`, or
        both merged.
    :returns: The namespace (without user-info) and name.
    :raises KeyError: When ``entry`` has neither ``physical``, ``table`` nor ``asset``.
    """
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
    if (
        asset is not None
        and (located := uri_identity(str(asset.get("uri") or ""))) is not None
    ):
        return located
    return dataset_identity(lineage_namespace, {**warehouse, "asset": asset_name})
