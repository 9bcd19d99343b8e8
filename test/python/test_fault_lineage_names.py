"""Fault 3 replayed: one dataset, one name in lineage.

For an Asset whose scheme an Airflow provider converts to OpenLineage (AIP-60), the runtime's
events name the dataset exactly as the Airflow OpenLineage provider does in its own task events:
by the provider's own conversion where it is installed (postgres, common-io, amazon here), by the
tested equivalent where it is not (google gs). Compared against the installed provider's
``translate_airflow_asset``, never against our own output.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

import pytest
from contract_runtime.lineage import identity
from contract_runtime.lineage.events import assertions_event, complete_event
from lineage_testkit import make_run

#: URIs a contract may give an external or produced Asset, for the schemes of installed providers.
INSTALLED = [
    "postgres://db.internal/analytics/public/orders",
    "postgres://db.internal:5432/analytics/public/orders",
    "postgresql://db.internal:6432/analytics/public/orders/",
    "postgres://db.internal/analytics//orders",
    "POSTGRES://db.internal/analytics/public/orders?b=2&a=1",
    "file:///srv/exports/orders.csv",
    "file:///srv/exports/dir/",
    "file://nas01/exports/orders.csv",
    "file://orders.csv",
    # amazon provider, assets/s3.py: namespace s3://<bucket>, name the key or "/"
    "s3://acme-exports/invoices/2026/",
    "s3://acme-exports",
]


def _provider(uri: str) -> tuple[str, str] | None:
    from airflow.providers.openlineage.utils.utils import translate_airflow_asset
    from airflow.sdk import Asset

    dataset = translate_airflow_asset(Asset(uri=uri), None)
    return None if dataset is None else (dataset.namespace, dataset.name)


@pytest.mark.parametrize("uri", INSTALLED)
def test_asset_names_equal_the_installed_providers(uri: str) -> None:
    expected = _provider(uri)  # imports the provider: from here on its own code is used
    assert expected is not None, f"the installed provider converts {uri}"
    assert identity.PROVIDER_UTILS_MODULE in sys.modules
    assert identity.provider_asset_dataset(uri) == expected
    assert identity.asset_dataset(uri) == expected


@pytest.mark.parametrize("uri", INSTALLED)
def test_the_equivalent_equals_the_installed_providers(uri: str) -> None:
    """The fallback used where a provider is not installed agrees with the ones that are."""
    assert identity.equivalent_asset_dataset(uri) == _provider(uri)


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        # google provider, assets/gcs.py: the same shape for gs://
        ("gs://acme-exports/a/b.parquet", ("gs://acme-exports", "a/b.parquet")),
    ],
)
def test_schemes_of_providers_not_installed_use_the_equivalent(uri: str, expected: tuple[str, str]) -> None:
    assert _provider(uri) is None  # not installed here: the provider itself names nothing
    assert identity.asset_dataset(uri) == expected


def test_logical_uris_name_no_provider_dataset() -> None:
    assert identity.asset_dataset("x-datalake://curated/sales/orders") is None
    assert _provider("x-datalake://curated/sales/orders") is None


def _manifest() -> tuple[dict[str, Any], dict[str, Any]]:
    dag = {
        "dag_id": "sales.orders_clean",
        "contract_version": "1.0.0",
        "contract": "contracts/sales/orders_clean.yaml",
        "contract_sha256": "0" * 64,
        "owner": "team-sales",
        "description": "",
        "inlets": ["crm.accounts", "ops.export"],
        "runtime": {
            "kind": "TransformContract",
            "domain": "sales",
            "datasets": [
                {
                    "name": "orders_clean",
                    "asset": "sales.orders_clean",
                    "uri": "postgres://pg.internal/lake/sales/orders_clean",
                    "schema": {"version": 1, "properties": []},
                    "quality": [],
                }
            ],
        },
    }
    manifest = {
        "manifestVersion": 2,
        "lineage": {"namespace": "acme"},
        "assets": [
            {"name": "crm.accounts", "uri": "postgres://crm.internal/crm/public/accounts", "external": True},
            {"name": "ops.export", "uri": "file:///srv/exports/ops.csv", "external": True},
            {"name": "sales.orders_clean", "uri": "postgres://pg.internal/lake/sales/orders_clean", "external": False},
        ],
        "dags": [dag],
    }
    return manifest, dag


def test_events_name_external_and_produced_assets_like_the_provider() -> None:
    manifest, dag = _manifest()
    output = {
        "dataset": "orders_clean",
        "asset": "sales.orders_clean",
        "table": "sales.orders_clean",
        "row_count": 3,
        "columns": [],
        "quality_status": "passed",
        "quarantined": False,
        "warehouse_namespace": "duckdb:///tmp/w.duckdb",
        "warehouse_database": "w",
    }
    event = complete_event(manifest, dag, make_run(dag["dag_id"], "publish"), [output])
    inputs = {(d.namespace, d.name) for d in event.inputs}
    assert inputs == {
        _provider("postgres://crm.internal/crm/public/accounts"),
        _provider("file:///srv/exports/ops.csv"),
    }
    assert inputs == {("postgres://crm.internal:5432", "crm.public.accounts"), ("file", "/srv/exports/ops.csv")}
    (out,) = event.outputs
    assert (out.namespace, out.name) == _provider("postgres://pg.internal/lake/sales/orders_clean")
    # the audit's tested dataset is the same node as the published output
    tested = {**copy.deepcopy(dag["runtime"]["datasets"][0]), "table": "sales.orders_clean"}
    other = assertions_event(manifest, dag, make_run(dag["dag_id"], "audit"), tested, [])
    assert (other.inputs[0].namespace, other.inputs[0].name) == (out.namespace, out.name)
    # a quarantined output is not the Asset: it keeps the warehouse table's name
    quarantined = complete_event(
        manifest, dag, make_run(dag["dag_id"], "publish"), [{**output, "quarantined": True, "table": "_ca_quarantine.x"}]
    )
    assert quarantined.outputs[0].name == "w._ca_quarantine.x"


def test_the_manifest_says_what_airflow_stores_for_a_normalised_uri(tmp_path: Any) -> None:
    """``airflow_uri`` is exactly the URI Airflow stores (``Asset.uri`` after sanitising)."""
    import shutil

    import dagcheck
    from airflow.sdk import Asset

    case = dagcheck.REPO_ROOT / "test" / "cases"
    root = tmp_path / "p"
    shutil.copytree(case / "_base", root)
    shutil.copytree(case / "uri-stored-normalised" / "input", root, dirs_exist_ok=True)
    result = dagcheck.run_compile(root)
    assert result.returncode == 0, result.describe()
    assets = result.manifest()["assets"]
    normalised = {a["name"] for a in assets if "airflow_uri" in a}
    assert normalised == {"sales.crm_accounts", "sales.exports"}
    for asset in assets:
        assert Asset(uri=asset["uri"]).uri == asset.get("airflow_uri", asset["uri"]), asset["name"]
