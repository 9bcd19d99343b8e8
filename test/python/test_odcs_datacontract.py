"""The ODCS export checked by the peer tool and by the newest published ODCS schema.

* Every document ``contract-assets export odcs`` writes for the bundled corpus is valid under the
  JSON Schema the ``open-data-contract-standard`` package ships (the newest published ODCS schema,
  v3.2.0 at the lock's pin) and passes ``datacontract lint`` (datacontract-cli, the CLI itself).
* For every diff golden pair (``test/cases/diff-*``: ``previous/`` then ``input/``), both states
  are exported and ``datacontract breaking`` (its Python API, consumer perspective) judges each
  pair of documents; its verdict must agree with our diff's (is any change breaking?), except in
  the cases of ``EXPECTED_DISAGREEMENTS``, where it must differ, for the reason given there (the
  same table is in docs/odcs.md).

datacontract-cli lives in its own environment (``.venv-datacontract``, built by
``scripts/datacontract-env.sh`` from ``requirements-datacontract.lock``; test-python.sh builds it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "bin" / "contract-assets.js"
CASES = REPO / "test" / "cases"
PEER_VENV = REPO / ".venv-datacontract"
DATACONTRACT = PEER_VENV / "bin" / "datacontract"
PEER_PYTHON = PEER_VENV / "bin" / "python"

#: Diff golden pairs on which datacontract-cli and our diff disagree, with the reason (docs/odcs.md).
#: datacontract-cli judges one contract against its previous version from the consumer perspective
#: and knows no consumers; our diff judges the project: a change is breaking when a consumer that
#: exists breaks, else dangerous (or acknowledged by a major version).
EXPECTED_DISAGREEMENTS: dict[str, str] = {
    "diff-consumer-pin-mismatch": "ours breaking: the consumer pins schema version 1 and the producer moved to 2; "
    "the version is the schemaVersion custom property, which datacontract-cli does not compare",
    "diff-consumer-upstream-removed": "ours breaking: the producer contract is deleted while a consumer reads it; "
    "datacontract-cli has no after-document to compare (a pair exists only for contracts on both sides)",
    "diff-consumer-upstream-retired": "ours breaking: a consumer reads an asset now retired; "
    "datacontract-cli does not treat a status change (active -> retired) as breaking",
    "diff-asset-retired-deprecated": "ours breaking: a deprecated contract is retired under a minor version, and retiring "
    "an asset that had a DAG needs the next major (ADR 0024, CA7701); datacontract-cli does not treat a status "
    "change (deprecated -> retired) as breaking",
    "diff-partitioning-changed": "ours breaking: the producer's grain changes (hour -> day) under a minor version, "
    "and a partitioning change needs the next major (PARTITIONING_CHANGED, ADR 0028); datacontract-cli does not compare "
    "the partitionGrain custom property",
    "diff-consumer-rule-names-removed-property": "datacontract breaking: a property is removed; "
    "ours: no consumer reads it (the consumer's rule names its own column) and the major version acknowledges it",
    "diff-not-renamed": "datacontract breaking: a schema object is removed; ours: no consumer reads it, and the major version acknowledges it",
    "diff-probably-renamed": "datacontract breaking: the schema object is removed and another added; "
    "ours: a probable rename (same URI and schema) without consumers, dangerous",
    "diff-property-removed": "datacontract breaking: a property is removed; ours: the consumer pins the new schema "
    "and reads nothing of the property, and the major version acknowledges it",
    "diff-property-type-widened": "datacontract breaking: any type change; ours: widening (integer -> number, "
    "decimal(10,2) -> decimal(12,2), longer varchar) keeps every value a consumer read",
    "diff-quality-rule-changed": "datacontract breaking: a quality constraint changed (error -> warning); "
    "ours: a producer-side gate, no consumer's DAG or schema changes",
    "diff-quality-rule-removed": "datacontract breaking: a quality constraint is removed; ours: a producer-side gate, dangerous",
    "diff-renamed-declared": "datacontract breaking: the schema object is removed and another added; "
    "ours: a rename declared with renamed_from (the renamedFrom custom property) that the consumer follows",
    "diff-required-relaxed": "datacontract breaking: required true -> false loosens what consumers get; "
    "ours: dangerous, since no consumer's pin or rule breaks",
}


def _node() -> str:
    node = shutil.which("node")
    assert node, "node is needed to run the compiler"
    return node


def _cli(*args: str, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_node(), str(BIN), *args, "--root", str(root)], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session")
def peer() -> Path:
    """datacontract-cli's environment, built from its lock when missing or stale."""
    subprocess.run(["bash", str(REPO / "scripts" / "datacontract-env.sh")], check=True, timeout=900)
    assert DATACONTRACT.is_file()
    return PEER_VENV


def _export(root: Path, out: Path) -> list[Path]:
    result = _cli("export", "odcs", "--out", str(out), root=root)
    assert result.returncode == 0, result.stderr
    return sorted(out.glob("*.odcs.yaml"))


@pytest.fixture(scope="session")
def bundled_export(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The bundled corpus exported to ODCS, as ``export odcs --out DIR`` writes it."""
    out = tmp_path_factory.mktemp("odcs-export")
    files = _export(REPO, out)
    assert len(files) >= 13, files
    return files


def _package_schema(peer: Path) -> dict:
    found = sorted(peer.glob("lib/python3.*/site-packages/open_data_contract_standard/schema.json"))
    assert found, "open-data-contract-standard ships no schema.json"
    return json.loads(found[0].read_text(encoding="utf-8"))


def test_export_is_valid_under_the_newest_published_odcs_schema(peer: Path, bundled_export: list[Path]) -> None:
    schema = _package_schema(peer)
    newest = schema["properties"]["apiVersion"]["enum"][0]
    assert newest >= "v3.2.0", newest
    validator = jsonschema.Draft201909Validator(schema)
    problems = []
    for f in bundled_export:
        doc = yaml.safe_load(f.read_text(encoding="utf-8"))
        assert doc["apiVersion"] == "v3.1.0"
        problems += [f"{f.name}: {list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]
    assert problems == []


def _peer(command: str, items: list) -> list[dict]:
    r = subprocess.run(
        [str(PEER_PYTHON), str(Path(__file__).with_name("odcs_peer.py")), command],
        input=json.dumps(items), capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_datacontract_lint_passes_on_every_bundled_export(peer: Path, bundled_export: list[Path]) -> None:
    reports = _peer("lint", [str(f) for f in bundled_export])
    for f, report in zip(bundled_export, reports):
        assert report["result"] == "passed", f"{f.name}: {report}"
        assert ["passed", "Data contract is valid against ODCS v3.1.0", None] in report["checks"], report


@pytest.mark.parametrize("which", ["export", "bundled source"])
def test_datacontract_lint_cli(peer: Path, bundled_export: list[Path], which: str, tmp_path: Path) -> None:
    """The CLI itself, on an exported document and on the bundled contract written in ODCS."""
    f = bundled_export[0] if which == "export" else REPO / "contracts" / "billing" / "invoice_lines_raw.odcs.yaml"
    out = tmp_path / "lint.json"
    r = subprocess.run(
        [str(DATACONTRACT), "lint", "--no-inline-references", "--output", str(out), "--output-format", "json", str(f)],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["result"] == "passed", report["checks"]
    assert report["dataContractId"] == yaml.safe_load(f.read_text(encoding="utf-8"))["id"]


def test_datacontract_lint_rejects_a_broken_document(peer: Path, bundled_export: list[Path], tmp_path: Path) -> None:
    """The lint test above can fail: a document without its required status is refused."""
    doc = yaml.safe_load(bundled_export[0].read_text(encoding="utf-8"))
    del doc["status"]
    broken = tmp_path / "broken.odcs.yaml"
    broken.write_text(yaml.safe_dump(doc), encoding="utf-8")
    r = subprocess.run([str(DATACONTRACT), "lint", "--no-inline-references", str(broken)], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0


def _stage(case: Path, part: str, root: Path) -> None:
    shutil.copytree(CASES / "_base", root, dirs_exist_ok=True)
    shutil.copytree(case / part, root, dirs_exist_ok=True, symlinks=True)


DIFF_CASES = sorted(p for p in CASES.glob("diff-*") if (p / "previous").is_dir())


def test_datacontract_breaking_agrees_with_our_diff(peer: Path, tmp_path: Path) -> None:
    assert DIFF_CASES, "no diff golden pairs"
    jobs = []
    for case in DIFF_CASES:
        work = tmp_path / case.name
        _stage(case, "previous", work / "before")
        _stage(case, "input", work / "after")
        jobs.append({"name": case.name, "before": str(work / "before"), "after": str(work / "after"), "out": str(work / "odcs")})
    r = subprocess.run([_node(), str(Path(__file__).with_name("export_odcs_state.mjs"))], input=json.dumps(jobs), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    ours = {name: v["breaking"] > 0 for name, v in json.loads(r.stdout).items()}
    pairs: list[list[str]] = []
    owners: list[str] = []
    for case in DIFF_CASES:
        odcs = tmp_path / case.name / "odcs"
        before = {f.name: f for f in (odcs / "before").glob("*.odcs.yaml")}
        after = {f.name: f for f in (odcs / "after").glob("*.odcs.yaml")}
        # A contract on one side only has no pair to compare; our diff sees it as added or removed.
        for name in sorted(before.keys() & after.keys()):
            pairs.append([str(before[name]), str(after[name])])
            owners.append(case.name)
    theirs: dict[str, list[str]] = {case.name: [] for case in DIFF_CASES}
    for owner, verdict in zip(owners, _peer("breaking", pairs)):
        if verdict["breaking"]:
            theirs[owner] += verdict["errors"]
    observed = {name: (ours[name], bool(theirs[name])) for name in ours}
    agree = sorted(n for n, (a, b) in observed.items() if a == b)
    differ = {n: {"ours": a, "datacontract": b, "errors": theirs[n]} for n, (a, b) in observed.items() if a != b}
    print(json.dumps({"agree": agree, "differ": differ}, indent=1), file=sys.stderr)
    assert sorted(differ) == sorted(EXPECTED_DISAGREEMENTS), json.dumps(differ, indent=1)
    for name, (mine, peer_says) in ((n, observed[n]) for n in EXPECTED_DISAGREEMENTS):
        # The reason names which side calls it breaking; keep it true.
        assert EXPECTED_DISAGREEMENTS[name].startswith("ours breaking" if mine else "datacontract breaking"), name
    assert len(agree) + len(differ) == len(DIFF_CASES)


def test_datacontract_breaking_cli_flags_a_removed_property(peer: Path, tmp_path: Path) -> None:
    """The CLI itself (not only its API) on one pair: exit 1 and the removed property named."""
    case = CASES / "diff-property-removed"
    _stage(case, "previous", tmp_path / "before")
    _stage(case, "input", tmp_path / "after")
    before = _export(tmp_path / "before", tmp_path / "b")
    after = _export(tmp_path / "after", tmp_path / "a")
    r = subprocess.run(
        [str(DATACONTRACT), "breaking", "--no-inline-references", str(before[0]), str(after[0])],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 1, r.stdout
    assert "properties.note" in r.stdout
