"""The compiler's lineage identities equal the runtime's (DESIGN §6.3, issue 38 item 4).

CA4020 compares datasets by the OpenLineage identity the runtime gives them. The compiler's
`compiler/link/lineageIdentity.ts` re-implements three functions of
`contract_runtime.lineage.identity`: `equivalent_asset_dataset` (`providerAssetIdentity`),
`uri_identity` (`locationIdentity`) and, for SQL namespaces, `sql_warehouse_namespace`
(`normaliseNamespace`). This test runs both sides on the same inputs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from contract_runtime.lineage.identity import (
    equivalent_asset_dataset,
    sql_warehouse_namespace,
    uri_identity,
)

REPO = Path(__file__).resolve().parents[2]

URIS = [
    "postgres://db/analytics/public/orders",
    "postgresql://db:5432/analytics/public/orders",
    "postgres://db:6543/analytics/public/orders/",
    "postgres://db/analytics//orders",
    "postgres://db/analytics/orders",
    "postgres://u@db/a/b/c",
    "postgres:///a/b/c",
    "file:///srv/rates.csv",
    "file://host/srv/rates.csv",
    "file://x.csv",
    "s3://bucket/a/b",
    "s3://bucket/a/b/",
    "s3://bucket",
    "gs://bucket/key",
    "hdfs://nn:8020/x",
    "mysql://h/db/t",
    "x-datalake://raw/a/b",
    "https://example.com/a",
]

NAMESPACES = [
    "postgresql://WH.internal",
    "postgres://wh.internal:5432",
    "postgresql+psycopg2://u@db.example:6543",
    "mysql://h",
    "sqlserver://h",
]


def _compiler() -> dict[str, object]:
    module = REPO / "dist" / "compiler" / "link" / "lineageIdentity.js"
    if not module.exists():
        pytest.skip("dist/ is not built (run `npm run build`)")
    script = (
        f"import({json.dumps(module.as_uri())}).then((m) => {{"
        "const [uris, namespaces] = JSON.parse(process.argv[1]);"
        "const pair = (x) => (x ? [x.namespace, x.name] : null);"
        "const out = { provider: {}, location: {}, namespace: {} };"
        "for (const u of uris) { out.provider[u] = pair(m.providerAssetIdentity(u)); out.location[u] = pair(m.locationIdentity(u)); }"
        "for (const n of namespaces) out.namespace[n] = m.normaliseNamespace(n);"
        "process.stdout.write(JSON.stringify(out)); })"
    )
    done = subprocess.run(["node", "-e", script, json.dumps([URIS, NAMESPACES])], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_provider_and_location_identities_match_the_runtime() -> None:
    compiler = _compiler()
    provider, location = compiler["provider"], compiler["location"]
    assert isinstance(provider, dict) and isinstance(location, dict)
    mismatches = []
    for uri in URIS:
        theirs = equivalent_asset_dataset(uri)
        if provider[uri] != (list(theirs) if theirs else None):
            mismatches.append(("equivalent_asset_dataset", uri, provider[uri], theirs))
        located = uri_identity(uri)
        if location[uri] != (list(located) if located else None):
            mismatches.append(("uri_identity", uri, location[uri], located))
    assert mismatches == []
    # Not vacuous: the table names of both spellings of one postgres URI are one identity.
    assert provider["postgres://db/analytics/public/orders"] == ["postgres://db:5432", "analytics.public.orders"]
    assert provider["postgresql://db:5432/analytics/public/orders"] == provider["postgres://db/analytics/public/orders"]


def test_sql_namespaces_normalise_as_the_runtime_names_a_warehouse() -> None:
    namespace = _compiler()["namespace"]
    assert isinstance(namespace, dict)
    assert {n: namespace[n] for n in NAMESPACES} == {n: sql_warehouse_namespace(n).lower() for n in NAMESPACES}
