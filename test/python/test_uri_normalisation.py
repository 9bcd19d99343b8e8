"""The compiler's URI normalisation equals Airflow's, on the installed Airflow and providers.

The compiler refuses two Asset URIs that Airflow would store as one (CA4004), and URIs Airflow
refuses at parse time (CA3048). Both rest on `normaliseUri` and `airflowRefusal` in
compiler/support/uri.ts re-implementing `_sanitize_uri` and the provider normalisers; this test
runs both sides on the same URIs so a change in Airflow shows up here.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

URIS = [
    "s3://landing/orders",
    "s3://landing/orders/",
    "S3://landing/orders/#v2",
    "s3://bucket",
    "s3://bucket/",
    "s3://Landing/Orders?b=2&a=1",
    "s3://b/x?a=",
    "s3://b/x?flag",
    "s3://b/x?a=%41",
    "s3://b/x?a=A",
    "s3://b/x?a=b+c",
    "s3://b/x?a=b%20c",
    "s3://b/x?z=1&a=2&a=1",
    "s3://b/x?caf%C3%A9=%E2%82%AC",
    "gs://bucket/path//",
    "file:///tmp/x/",
    "x-datalake://raw/a/b/",
    "X-Datalake://Raw/A#frag",
    "postgres://h/d/s/t",
    "postgresql://h/d/s/t",
    "postgres://h:5432/d/s/t",
    "postgres://h/d//t",
    "postgres://h:6543/d/s/t/",
    "postgres://db/schema/table",
    "postgresql://h",
    "postgres://h:abc/d/s/t",
    "s3://[x/y",
    "s3://a]b/x",
    "s3://[::1]/x",
    "https://example.com:8443/a/b/?q=1",
]


def _airflow(uri: str) -> dict[str, str | None]:
    import warnings

    from airflow.sdk import Asset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return {"normalised": Asset(name="n", uri=uri).uri, "refused": None}
        except ValueError as error:
            return {"normalised": None, "refused": str(error)}


def _compiler() -> dict[str, dict[str, str | None]]:
    module = REPO / "dist" / "compiler" / "support" / "uri.js"
    if not module.exists():
        pytest.skip("dist/ is not built (run `npx tsc -p tsconfig.json`)")
    script = (
        f"import({json.dumps(module.as_uri())}).then((m) => {{"
        "const uris = JSON.parse(process.argv[1]);"
        "const out = {}; for (const u of uris) { const r = m.airflowRefusal(u);"
        " out[u] = { normalised: r ? null : m.normaliseUri(u), refused: r ?? null }; }"
        "process.stdout.write(JSON.stringify(out)); })"
    )
    done = subprocess.run(["node", "-e", script, json.dumps(URIS)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_normalisation_and_refusals_match_airflow() -> None:
    compiler = _compiler()
    mismatches = []
    for uri in URIS:
        ours, theirs = compiler[uri], _airflow(uri)
        if (ours["refused"] is None) != (theirs["refused"] is None) or ours["normalised"] != theirs["normalised"]:
            mismatches.append((uri, ours, theirs))
    assert mismatches == []
