"""The rules the audit runs, derived at load from manifestVersion 2 (ADR 0017f), against the compiler's.

The compiler's derivation (``runtimeQuality``, through ``expandToV1`` of the built ``dist/``) and
``contract_runtime.quality_rules`` must give the same rules, in the same order, for every dataset
of every golden manifest and of the bundled project; and both must give what version 1 stored
(``test/unit/fixtures/manifest-v1``, the last version-1 compiler's manifests of two golden cases).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from contract_runtime.manifest import load_manifest
from contract_runtime.quality_rules import duration_seconds, implicit_quality_rules, runtime_quality

REPO = Path(__file__).resolve().parents[2]
V1_FIXTURES = REPO / "test" / "unit" / "fixtures" / "manifest-v1"

# The compiler side, in one process: each manifest expanded to version 1's shape, its runtime datasets' rules.
_EXPAND = """
import fs from "node:fs";
const { expandToV1 } = await import(process.argv[1] + "/dist/compiler/manifest/manifestV1.js");
const out = {};
for (const file of JSON.parse(fs.readFileSync(0, "utf8"))) {
  const v1 = expandToV1(JSON.parse(fs.readFileSync(file, "utf8")));
  out[file] = v1.dags.flatMap((d) => d.runtime.datasets.map((x) => [d.dag_id, x.asset, x.quality]));
}
process.stdout.write(JSON.stringify(out));
"""


def _v2_manifests() -> list[Path]:
    files = [REPO / "generated" / "manifest.json", *sorted((REPO / "test" / "cases").glob("*/expected/generated/manifest.json"))]
    out = []
    for f in files:
        try:
            if json.loads(f.read_text(encoding="utf-8")).get("manifestVersion") == 2:
                out.append(f)
        except (OSError, ValueError, RecursionError):
            continue  # a damaged-previous case keeps its damaged file (or folder, or one nested too deep)
    return out


def test_the_runtime_derives_the_compilers_rules_on_every_golden_manifest() -> None:
    node = shutil.which("node")
    if node is None or not (REPO / "dist" / "compiler" / "manifest" / "manifestV1.js").exists():
        pytest.skip("needs node and the built compiler (npm ci builds dist/)")
    files = _v2_manifests()
    assert len(files) > 30
    r = subprocess.run([node, "--input-type=module", "-e", _EXPAND, str(REPO)], input=json.dumps([str(f) for f in files]), capture_output=True, text=True, timeout=300, check=True)
    compiler: dict[str, list[list[Any]]] = json.loads(r.stdout)
    compared = implied = composite = data_time = 0
    for f in files:
        data = json.loads(f.read_text(encoding="utf-8"))
        assets = {a["name"]: a for a in data["assets"]}
        ours = [[d["dag_id"], x["asset"], runtime_quality(assets[x["asset"]], d["runtime"].get("freshness"))] for d in data["dags"] for x in d["runtime"]["datasets"]]
        assert ours == compiler[str(f)], f
        rules = [q for _, _, qs in ours for q in qs]
        compared += len(ours)
        implied += sum("implied_by" in q for q in rules)
        composite += sum(q["name"] == "primary_key_unique" for q in rules)
        data_time += sum(q.get("metric") == "freshness" for q in rules)
    # What the comparison covered: every kind of derived rule.
    assert compared > 100 and implied > 100 and composite > 0 and data_time > 0


@pytest.mark.parametrize("name", sorted(p.stem for p in V1_FIXTURES.glob("*.json")))
def test_load_manifest_joins_each_dataset_as_version_1_stored_it(name: str) -> None:
    v1 = json.loads((V1_FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    v2 = load_manifest(REPO / "test" / "cases" / name / "expected" / "generated" / "manifest.json")
    assert v2["manifestVersion"] == 2 and v1["manifestVersion"] == 1
    joined = [(d["dag_id"], d["runtime"]["datasets"]) for d in v2["dags"]]
    assert joined == [(d["dag_id"], d["runtime"]["datasets"]) for d in v1["dags"]]
    assert any("implied_by" in q for _, ds in joined for x in ds for q in x["quality"])


def test_names_and_covered_rules() -> None:
    """An authored rule that enforces a key constraint replaces its implied rule; a name an
    authored rule has gets a position suffix (the compiler's ``qualityNames``)."""
    properties = [{"name": "id", "logicalType": "string", "primaryKey": True}, {"name": "code", "logicalType": "string", "unique": True}]
    authored = [
        {"name": "id_required", "metric": "rowCount", "mustBeGreaterThan": 0, "severity": "error"},
        {"name": "no_dup", "metric": "duplicateValues", "column": "code", "mustBe": 0, "severity": "error"},
    ]
    assert [q["name"] for q in implicit_quality_rules(properties, authored)] == ["id_required", "id_unique"]
    asset = {"schema": {"version": 1, "properties": properties}, "quality": authored}
    assert [q["name"] for q in runtime_quality(asset, None)] == ["id_required", "no_dup", "id_required_3", "id_unique"]
    fresh = {"max_age": "PT1H30M", "degrade_after": "P1DT0.5S", "column": "id"}
    assert [(q["name"], q["mustBeLessOrEqualTo"]) for q in runtime_quality(asset, fresh)[-2:]] == [("freshness_max_age", 5400), ("freshness_degrade_after", 86400.5)]
    assert duration_seconds("P2W") == 1209600
    with pytest.raises(ValueError):
        duration_seconds("P1M")
