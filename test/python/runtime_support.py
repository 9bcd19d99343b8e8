"""Helpers for the contract_runtime tests: synthetic manifests and run identities.

Not a test module. Nothing here imports Airflow.
"""

from __future__ import annotations

import copy
import datetime
import json
from pathlib import Path
from typing import Any

from contract_runtime.run import RunIdentity

UTC = datetime.UTC


def run_identity(
    dag_id: str = "sales.orders", run_id: str = "manual__2026-04-15T00:00:00+00:00", **kw: Any
) -> RunIdentity:
    """A RunIdentity with sensible defaults (first try, no retries)."""
    values: dict[str, Any] = {
        "dag_id": dag_id,
        "run_id": run_id,
        "logical_date": datetime.datetime(2026, 4, 15, tzinfo=UTC),
        "run_after": datetime.datetime(2026, 4, 15, 0, 5, tzinfo=UTC),
        "try_number": 1,
        "max_tries": 0,
        "task_id": "produce",
        "map_index": -1,
    }
    values.update(kw)
    return RunIdentity(**values)


ORDERS_SCHEMA: dict[str, Any] = {
    "version": 1,
    "properties": [
        {"name": "order_id", "logicalType": "string", "primaryKey": True, "required": True},
        {"name": "amount", "logicalType": "number", "physicalType": "decimal(18,2)"},
        {"name": "status", "logicalType": "string"},
        {"name": "updated_at", "logicalType": "timestamp"},
    ],
}


def dag_entry(
    dag_id: str = "sales.orders",
    *,
    domain: str = "sales",
    producer: dict[str, Any] | None = None,
    datasets: list[dict[str, Any]] | None = None,
    on_failure: str = "block_publish",
    **runtime: Any,
) -> dict[str, Any]:
    """One manifest ``dags[]`` entry with a runtime section."""
    if datasets is None:
        datasets = [
            {
                "name": "orders",
                "asset": f"{domain}.orders",
                "layer": "curated",
                "uri": f"x-datalake://curated/{domain}/orders",
                "schema": copy.deepcopy(ORDERS_SCHEMA),
                "quality": [
                    {
                        "name": "order_id_not_null",
                        "metric": "nullValues",
                        "column": "order_id",
                        "mustBe": 0,
                        "severity": "error",
                    },
                    {"name": "rowCount", "metric": "rowCount", "mustBeGreaterThan": 0, "severity": "warning"},
                ],
            }
        ]
    body: dict[str, Any] = {
        "kind": "TransformContract",
        "domain": domain,
        "on_failure": on_failure,
        "datasets": datasets,
        "upstreams": [],
        "producer": producer
        or {
            "type": "sql",
            "path": "sql/x.sql",
            "sql": "select 'o1' as order_id, 1.50 as amount, 'open' as status, timestamp '2026-01-01 00:00:00' as updated_at",
        },
        "warehouse_conn_id": "warehouse",
    }
    body.update(runtime)
    return {
        "dag_id": dag_id,
        "contract": f"contracts/{dag_id}.yaml",
        "contract_sha256": "0" * 64,
        "contract_git_blob": "0" * 40,
        "contract_version": "1.0.0",
        "status": "active",
        "owner": "team-test",
        "description": "",
        "tags": [],
        "schedule": {"assets": None, "cron": None},
        "inlets": [],
        "outlets": [d["asset"] for d in body["datasets"]],
        "tasks": [],
        "default_args": {"owner": "team-test"},
        "runtime": body,
    }


REPO = Path(__file__).resolve().parents[2]


def asset_entry(name: str, uri: str | None, schema: dict[str, Any], quality: list[dict[str, Any]], producer: str | None) -> dict[str, Any]:
    """One manifest ``assets[]`` entry of a produced dataset (``producer``: its dag_id)."""
    return {
        "name": name,
        "uri": uri if uri is not None else f"x-datalake://curated/{name.replace('.', '/')}",
        "group": name.rsplit(".", 1)[0],
        "extra": {"contract_id": producer} if producer else {},
        "external": False,
        "status": "active",
        "producer": producer,
        "contract": f"contracts/{producer or name}.yaml",
        "contract_sha256": "0" * 64,
        "schema": schema,
        "quality": quality,
        "renamed_from": [],
    }


def stored_manifest(dags: list[dict[str, Any]], *, namespace: str = "test", assets: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A manifest (``manifestVersion`` 2) holding ``dags``, as the compiler stores it (ADR 0017f).

    A dataset given in the shape :func:`contract_runtime.manifest.load_manifest` returns (with
    ``uri``, ``schema`` and ``quality``) is stored as the compiler does: those keys move to an
    ``assets[]`` entry, which keeps only the authored rules (those with ``implied_by`` or of
    metric ``freshness`` are derived again at load). A dataset without them (a ``dags[]`` entry of
    a compiled manifest) takes its asset from ``assets``, else from the bundled project's
    ``generated/manifest.json``. The input is not changed.
    """
    dags = copy.deepcopy(dags)
    by_name = {a["name"]: copy.deepcopy(a) for a in assets or []}
    compiled: dict[str, Any] | None = None
    for dag in dags:
        for d in dag["runtime"]["datasets"]:
            if "schema" in d:
                authored = [q for q in d.pop("quality", []) if "implied_by" not in q and q.get("metric") != "freshness"]
                by_name[d["asset"]] = asset_entry(d["asset"], d.pop("uri", None), d.pop("schema"), authored, dag["dag_id"])
            elif d["asset"] not in by_name:
                if compiled is None:
                    text = (REPO / "generated" / "manifest.json").read_text(encoding="utf-8")
                    compiled = {a["name"]: a for a in json.loads(text)["assets"]}
                by_name[d["asset"]] = copy.deepcopy(compiled[d["asset"]])
    return {
        "manifestVersion": 2,
        "compiler": {"name": "contract-assets", "version": "0.1.0"},
        "lineage": {"namespace": namespace},
        "assets": sorted(by_name.values(), key=lambda a: str(a["name"])),
        "edges": [],
        "dags": dags,
    }


def write_manifest(root: Path, dags: list[dict[str, Any]], namespace: str = "test") -> str:
    """Write ``<root>/generated/manifest.json`` holding ``dags`` (:func:`stored_manifest`); return its path."""
    path = root / "generated" / "manifest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stored_manifest(dags, namespace=namespace), indent=2), encoding="utf-8")
    return str(path)
