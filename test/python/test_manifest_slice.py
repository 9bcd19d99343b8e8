"""A task reads only its records of the manifest (contract_runtime.manifest_slice, ADR 0017h).

The sliced view must be exactly ``task_view(json.load(...))``: on the bundled project's manifest
and on a compiled 1,000-contract bench corpus (scripts/bench/corpus.mjs), for names with escapes,
non-ASCII characters and prefixes of other names; a file in another layout is read whole, with
the same view; a damaged record of the task is named at its index in the file.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import manifest as manifest_module
from contract_runtime.manifest import ManifestError, load_manifest, task_view
from contract_runtime.manifest_slice import json_ascii, task_slice

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "generated" / "manifest.json"


def _canonical(data: dict[str, Any]) -> str:
    # The compiler's layout (canonicalJsonAscii): sorted keys, two spaces, ASCII, final newline.
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii" if text.isascii() else "utf-8")
    return str(path)


def _same_view(path: str, data: dict[str, Any], contract_id: str, positions: bool = True) -> None:
    sliced = task_slice(path, contract_id)
    assert sliced is not None, f"{contract_id}: the canonical layout was not recognised"
    view, in_file = task_view(data, contract_id)
    assert sliced.view == view, contract_id
    # The file's indexes are counted only to name a problem (a pass over the file): checked here
    # where asked.
    assert not positions or sliced.positions() == in_file, contract_id


@pytest.fixture(scope="session")
def corpus_manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The compiled manifest of the bench's 1,000-contract corpus (about 18 MB, 982 DAGs)."""
    root = tmp_path_factory.mktemp("corpus")
    for argv in (
        ["node", str(REPO / "scripts" / "bench" / "corpus.mjs"), "--contracts", "1000", "--out", str(root)],
        ["node", str(REPO / "bin" / "contract-assets.js"), "compile", "--root", str(root)],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
    return root / "generated" / "manifest.json"


def test_the_bundled_manifest_sliced_equals_the_task_view_of_every_dag() -> None:
    data = json.loads(BUNDLED.read_text(encoding="utf-8"))
    assert BUNDLED.read_text(encoding="utf-8") == _canonical(data), "the compiler's layout changed"
    for contract_id in [d["dag_id"] for d in data["dags"]]:
        _same_view(str(BUNDLED), data, contract_id)
    # A contract's view leaves out the monitor's section; the monitor's task (no dags[] entry)
    # reads the whole file, as its lineage names each watched asset by its producing DAG.
    assert "freshness_monitor" not in task_view(data, data["dags"][0]["dag_id"])[0]
    monitor = data["freshness_monitor"]["dag_id"]
    assert "freshness_monitor" in task_view(data, monitor)[0]
    for contract_id in (monitor, "no.such.dag"):
        assert task_slice(str(BUNDLED), contract_id) is None
    # ... the whole file, every DAG's datasets joined to their assets as for a load without an id.
    assert load_manifest(BUNDLED, monitor) == load_manifest(BUNDLED)


def test_the_corpus_manifest_sliced_equals_the_task_view(corpus_manifest: Path) -> None:
    data = json.loads(corpus_manifest.read_text(encoding="utf-8"))
    dags = data["dags"]
    assert len(dags) > 900
    consumers: dict[str, int] = {}
    for d in dags:
        for name in d["inlets"]:
            consumers[name] = consumers.get(name, 0) + 1
    # Every 25th DAG, the first and last, the one with most inlets, the producer and readers of
    # the most-read asset (the sliced reads are what takes time here: about 20-50 ms each).
    most_read = max(consumers, key=lambda n: consumers[n])
    chosen = {d["dag_id"] for d in dags[::25]} | {dags[0]["dag_id"], dags[-1]["dag_id"]}
    chosen.add(max(dags, key=lambda d: len(d["inlets"]))["dag_id"])
    chosen |= {d["dag_id"] for d in dags if most_read in d["outlets"]}
    chosen |= {d["dag_id"] for d in dags if most_read in d["inlets"]}
    widest = 0
    for n, contract_id in enumerate(sorted(chosen)):
        _same_view(str(corpus_manifest), data, contract_id, positions=n % 10 == 0)
        widest = max(widest, len(task_view(data, contract_id)[0]["dags"]))
    # A view with several producing DAGs was among them.
    assert widest >= 4


def test_another_layout_is_read_whole_with_the_same_view(tmp_path: Path) -> None:
    data = json.loads(BUNDLED.read_text(encoding="utf-8"))
    produced = {o for d in data["dags"] for o in d["outlets"]}
    reader = next(d for d in data["dags"] if set(d["inlets"]) & produced)
    # What a task gets from the compiler's layout (sliced; the datasets joined to their assets).
    canonical = _write(tmp_path / "canonical" / "generated" / "manifest.json", _canonical(data))
    assert task_slice(canonical, reader["dag_id"]) is not None
    expected = load_manifest(canonical, reader["dag_id"])
    assert [d["dag_id"] for d in expected["dags"]] == [d["dag_id"] for d in task_view(data, reader["dag_id"])[0]["dags"]]
    for name, text in (
        ("indent4", json.dumps(data, indent=4)),
        ("compact", json.dumps(data, separators=(",", ":"))),
        ("spaced", json.dumps(data)),
        ("unicode", json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True)),
    ):
        path = _write(tmp_path / name / "generated" / "manifest.json", text)
        if name != "unicode":  # indent 2 and ASCII names: still the layout, sliced
            assert task_slice(path, reader["dag_id"]) is None, name
        assert load_manifest(path, reader["dag_id"]) == expected, name
    # Python's own indent=2 dump (key order kept, no final newline) is the same layout: sliced.
    path = _write(tmp_path / "py" / "generated" / "manifest.json", json.dumps(data, indent=2))
    assert task_slice(path, reader["dag_id"]) is not None
    # A record whose outlets lie on one line breaks the layout: not trusted, read whole.
    producer = next(d for d in data["dags"] if set(d["outlets"]) & set(reader["inlets"]))
    text = _canonical(data)
    record = text.index(f'      "dag_id": {json.dumps(producer["dag_id"])},')
    outlets = text.index('      "outlets": [\n', record)
    items_end = text.index("\n      ]", outlets)
    inline = text[:outlets] + '      "outlets": ' + json.dumps(producer["outlets"]) + text[items_end + len("\n      ]"):]
    assert json.loads(inline) == data
    path = _write(tmp_path / "inline" / "generated" / "manifest.json", inline)
    assert task_slice(path, reader["dag_id"]) is None
    assert load_manifest(path, reader["dag_id"]) == expected
    # Not even the file's start as the compiler writes it: read whole.
    assert task_slice(_write(tmp_path / "x" / "generated" / "manifest.json", text[2:]), reader["dag_id"]) is None


def _names_manifest() -> dict[str, Any]:
    """The bundled manifest with a chain of DAGs whose names are hard to find in text."""
    data = json.loads(BUNDLED.read_text(encoding="utf-8"))
    template_dag = next(d for d in data["dags"] if d["inlets"] and d["outlets"])
    template_asset = next(a for a in data["assets"] if a["name"] == template_dag["outlets"][0])
    names = ["a", "a_b", 'q"uo\\te', "caf\u00e9.\u00fcber", "emoji.\U0001F600", "tab\there", "sl/ash", "del\x7f"]
    for i, name in enumerate(names):
        dag = copy.deepcopy(template_dag)
        dag["dag_id"] = name
        dag["outlets"] = [name]
        dag["inlets"] = [names[i - 1]] if i else []
        dag["runtime"]["datasets"] = [{**dag["runtime"]["datasets"][0], "asset": name}]
        data["dags"].append(dag)
        asset = copy.deepcopy(template_asset)
        asset["name"] = name
        data["assets"].append(asset)
    # Decoys: "a" named inside other fields and lists, never as an outlet.
    decoy = copy.deepcopy(template_dag)
    decoy["dag_id"] = "decoy"
    decoy["inlets"] = ["a", "a_b"]
    decoy["outlets"] = ["a_b_c"]
    decoy["runtime"]["datasets"] = [{**decoy["runtime"]["datasets"][0], "asset": "a_b_c"}]
    data["dags"].insert(0, decoy)
    asset = copy.deepcopy(template_asset)
    asset["name"] = "a_b_c"
    data["assets"].insert(0, asset)
    return data


def test_escapes_non_ascii_and_prefixes_find_the_right_records(tmp_path: Path) -> None:
    data = _names_manifest()
    ids = ["a", "a_b", 'q"uo\\te', "caf\u00e9.\u00fcber", "emoji.\U0001F600", "tab\there", "sl/ash", "decoy"]
    path = _write(tmp_path / "c" / "generated" / "manifest.json", _canonical(data))
    for contract_id in ids:
        _same_view(path, data, contract_id)
    view = task_slice(path, "a_b")
    assert view is not None
    assert sorted(d["dag_id"] for d in view.view["dags"]) == ["a", "a_b"]
    assert sorted(a["name"] for a in view.view["assets"]) == ["a", "a_b"]
    # The compiler's escaping: JSON.stringify, then every code unit above U+007F as \uxxxx.
    assert json_ascii("caf\u00e9 \U0001F600") == b'"caf\\u00e9 \\ud83d\\ude00"'
    assert json_ascii('q"\\\t\x01\x7f') == b'"q\\"\\\\\\t\\u0001\x7f"'
    # Python escapes DEL, the compiler does not: not found as the compiler writes it, read whole.
    assert "\\u007f" in _canonical(data)
    assert task_slice(path, "del\x7f") is None
    # Written as the compiler writes it (DEL raw): found, and the same view as the whole read.
    raw = _write(tmp_path / "raw" / "generated" / "manifest.json", _canonical(data).replace("\\u007f", "\x7f"))
    _same_view(raw, data, "del\x7f")
    assert load_manifest(path, "del\x7f") == load_manifest(raw, "del\x7f")


def test_a_damaged_own_record_is_named_at_its_index_in_the_file(tmp_path: Path) -> None:
    data = json.loads(BUNDLED.read_text(encoding="utf-8"))
    index = next(i for i, d in enumerate(data["dags"]) if d["inlets"] and d["outlets"] and i > 2)
    own = data["dags"][index]
    bad = copy.deepcopy(data)
    del bad["dags"][index]["owner"]
    path = _write(tmp_path / "own" / "generated" / "manifest.json", _canonical(bad))
    assert task_slice(path, own["dag_id"]) is not None
    with pytest.raises(ManifestError) as raised:
        load_manifest(path, own["dag_id"])
    assert f"does not match the manifest schema at /dags/{index} (dag_id {own['dag_id']!r}): 'owner' is a required property" in str(raised.value)
    # An Asset the DAG names, at its index in the file's assets[].
    bad = copy.deepcopy(data)
    asset_index = next(i for i, a in enumerate(bad["assets"]) if a["name"] == own["outlets"][0])
    del bad["assets"][asset_index]["uri"]
    path = _write(tmp_path / "asset" / "generated" / "manifest.json", _canonical(bad))
    with pytest.raises(ManifestError, match=rf"/assets/{asset_index}: 'uri' is a required property"):
        load_manifest(path, own["dag_id"])


def test_a_record_nested_deeper_than_json_decodes_is_a_manifest_error(tmp_path: Path) -> None:
    # 20,000 arrays in an Asset's extra: the json module's decoder stops at about 1,000 levels
    # (RecursionError), in the task's slice and in the whole-file read; a ManifestError naming
    # the file, as for any manifest that is not readable JSON, never a RecursionError.
    data = json.loads(BUNDLED.read_text(encoding="utf-8"))
    own = next(d for d in data["dags"] if d["inlets"] and d["outlets"])
    text = _canonical(data)
    name = json.dumps(own["outlets"][0])
    at = text.index(f'"name": {name}')
    opening = text.rindex('      "extra": {\n', 0, at)
    cut = opening + len('      "extra": {\n')
    deep = text[:cut] + '        "deep": ' + "[" * 20000 + "]" * 20000 + ",\n" + text[cut:]
    path = _write(tmp_path / "deep" / "generated" / "manifest.json", deep)
    with pytest.raises(ManifestError, match="is not readable JSON: maximum recursion depth exceeded") as raised:
        load_manifest(path, own["dag_id"])
    assert path in str(raised.value)


def test_the_slice_is_cached_and_reread_when_the_file_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.loads(BUNDLED.read_text(encoding="utf-8"))
    own = next(d for d in data["dags"] if d["inlets"])
    path = _write(tmp_path / "p" / "generated" / "manifest.json", _canonical(data))
    calls: list[str] = []
    real = manifest_module.task_slice

    def counting(p: str, c: str) -> Any:
        calls.append(c)
        return real(p, c)

    monkeypatch.setattr(manifest_module, "task_slice", counting)
    first = load_manifest(path, own["dag_id"])
    assert load_manifest(path, own["dag_id"]) is first and calls == [own["dag_id"]]
    changed = copy.deepcopy(data)
    next(d for d in changed["dags"] if d["dag_id"] == own["dag_id"])["owner"] = "someone-else"
    _write(Path(path), _canonical(changed))
    again = load_manifest(path, own["dag_id"])
    assert next(d for d in again["dags"] if d["dag_id"] == own["dag_id"])["owner"] == "someone-else" and len(calls) == 2
    # A version mismatch is refused from the sliced top-level fields too.
    _write(Path(path), _canonical({**data, "manifestVersion": 99}))
    with pytest.raises(ManifestError, match="manifestVersion 99"):
        load_manifest(path, own["dag_id"])
