"""Reading only a task's records of the manifest, by the layout the compiler writes (ADR 0017h).

The compiler writes ``manifest.json`` as canonical JSON (``canonicalJsonAscii``: two-space
indentation, ASCII only). A JSON string never holds a raw newline, so the layout is structural:

- a top-level field is a line starting with exactly two spaces and ``"``;
- a record of a top-level array starts at a line ``    {`` (four spaces), ends at a line
  ``    }`` / ``    },``, and its own fields are the lines at six spaces (``      "dag_id": "x",``
  in ``dags``, ``      "name": "x",`` in ``assets``); the items of a list a record holds
  directly (``outlets``) are lines at eight spaces.

:func:`task_slice` memory-maps the file, finds those lines with ``bytes.find`` and parses only
the top-level fields other than ``dags``/``assets``/``edges`` (and another task's
``freshness_monitor``), the task's own ``dags[]`` record,
the records of the DAGs that name one of its inlets among their outlets, and the ``assets[]``
records its DAG names. They are a superset of what :func:`task_view`
keeps, which then filters them, so the view is the one ``task_view(json.load(...))`` gives.

A file not in that layout (hand-edited, another indentation, compact, a name escaped otherwise
than the compiler escapes it) gives None, and the caller reads the whole file. Imports only the
standard library.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["TaskSlice", "json_ascii", "task_names", "task_slice", "task_view"]

_ARRAY_CLOSE = b"\n    }\n  ]"
_OBJECT_CLOSE = b"\n  }"
_RECORD_OPEN = b"\n    {\n"
_RECORD_CLOSE = b"\n    }"
_OUTLETS_LINE = b'\n      "outlets": ['

_NON_ASCII = re.compile(r"[^\x00-\x7f]")
#: Characters every JSON writer writes as themselves inside a string (``/`` may be escaped).
_PLAIN = re.compile(r"[ !#-.0-\[\]-~]*")


@dataclass(frozen=True)
class TaskSlice:
    """A task's view of the manifest, read from the records it needs.

    :ivar view: The manifest view: every top-level field, ``dags``/``assets`` reduced to what
        :func:`task_view` keeps, ``edges`` empty.
    :ivar positions: Returns, for ``"dags"`` and ``"assets"``, the index in the file of each entry
        of the view's list (it reads the file again: call it only to name a problem).
    """

    view: dict[str, Any]
    positions: Callable[[], dict[str, list[int]]]


def task_names(own: Any) -> tuple[set[str], set[str]]:
    """The Asset names a task reads: ``(inlets, inlets | outlets)`` of ``own``, its ``dags[]`` entry."""
    own_fields = own if isinstance(own, dict) else {}
    inlets = {n for n in own_fields.get("inlets") or [] if isinstance(n, str)}
    outlets = {n for n in own_fields.get("outlets") or [] if isinstance(n, str)}
    return inlets, inlets | outlets


def task_view(data: dict[str, Any], contract_id: str) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """The part of a manifest a task of ``contract_id`` reads (ADR 0017b, ADR 0017h).

    A task reads the top-level fields, its own ``dags[]`` entry, the entries of the DAGs that
    produce its inlets (their datasets name the upstream tables in lineage), the ``assets[]`` its
    DAG names as inlets or outlets (freshness policies, URIs; :func:`task_names`) and those every
    dataset of those DAGs names (their schema and quality rules, joined at load). Every other
    entry is left out, as are ``edges`` (no stage reads them) and ``freshness_monitor`` unless its
    ``dag_id`` is ``contract_id`` (only the monitor's task reads it; at 1,000 contracts its schema
    check cost a task more than the rest of its view). The monitor's view is the top-level fields.
    A field that is not a list, or a ``freshness_monitor`` without a string ``dag_id``, is kept,
    for the schema to report.

    :param data: A parsed manifest (a JSON object).
    :param contract_id: The contract id (= dag_id) of the task.
    :returns: ``(view, positions)``: the view, and for ``"dags"`` and ``"assets"`` the index in
        ``data`` of each entry of the view's list (so a problem's pointer can name the file's).
    """
    dags, assets = data.get("dags"), data.get("assets")
    if not isinstance(dags, list):
        return data, {}
    own = next((d for d in dags if isinstance(d, dict) and d.get("dag_id") == contract_id), None)
    inlets, names = task_names(own)

    def read(d: Any) -> bool:
        if not isinstance(d, dict):
            return False
        outlets = d.get("outlets")
        return d is own or (isinstance(outlets, list) and not inlets.isdisjoint(o for o in outlets if isinstance(o, str)))

    positions = {"dags": [i for i, d in enumerate(dags) if read(d)]}
    for i in positions["dags"]:
        runtime = dags[i].get("runtime")
        datasets = runtime.get("datasets") if isinstance(runtime, dict) else None
        if isinstance(datasets, list):
            names |= {x["asset"] for x in datasets if isinstance(x, dict) and isinstance(x.get("asset"), str)}
    view: dict[str, Any] = {**data, "dags": [dags[i] for i in positions["dags"]], "edges": []}
    monitor = data.get("freshness_monitor")
    if isinstance(monitor, dict) and isinstance(monitor.get("dag_id"), str) and monitor["dag_id"] != contract_id:
        del view["freshness_monitor"]
    if isinstance(assets, list):
        positions["assets"] = [i for i, x in enumerate(assets) if isinstance(x, dict) and x.get("name") in names]
        view["assets"] = [assets[i] for i in positions["assets"]]
    return view, positions


def json_ascii(value: str) -> bytes:
    """``value`` as the compiler writes a JSON string (``JSON.stringify``, then ``asciiJson``).

    :param value: Any string.
    :returns: The quoted JSON text: ``"``, ``\\`` and controls escaped as ``JSON.stringify``
        does (ECMA-262 ``QuoteJSONString``: ``\\n``-style escapes, else ``\\u00xx``), every
        UTF-16 code unit above U+007F as a lowercase ``\\uxxxx`` (compiler/support/canonical-json.ts).
    """

    def escape(match: re.Match[str]) -> str:
        units = match.group(0).encode("utf-16-be", "surrogatepass")
        return "".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}" for i in range(0, len(units), 2))

    return _NON_ASCII.sub(escape, json.dumps(value, ensure_ascii=False)).encode("ascii")


def _plain(name: str) -> bool:
    # Written the same by any JSON writer, so a search that misses it proves it is absent.
    return _PLAIN.fullmatch(name) is not None


def _lines(mm: mmap.mmap, prefix: bytes, value: bytes, lo: int, hi: int, first: bool = False) -> list[int]:
    """Offsets of the lines ``<prefix><value>`` and ``,`` or nothing after, in ``[lo, hi)``."""
    needle = prefix + value
    hits: list[int] = []
    at = mm.find(needle, lo, hi)
    while at != -1:
        after = at + len(needle)
        if mm[after:after + 1] == b"\n" or mm[after:after + 2] == b",\n":
            hits.append(at)
            if first:
                break
        at = mm.find(needle, at + 1, hi)
    return hits


def _lines_starting(mm: mmap.mmap, needle: bytes, section: _Section) -> list[int]:
    """Offsets of every occurrence of ``needle`` (a line's start) in ``section``."""
    hits: list[int] = []
    at = mm.find(needle, section.lo, section.hi)
    while at != -1:
        hits.append(at)
        at = mm.find(needle, at + len(needle), section.hi)
    return hits


def _values(mm: mmap.mmap, prefix: bytes, section: _Section) -> list[tuple[bytes, int]]:
    """``(JSON text, offset)`` of every line ``<prefix><value>`` (``,`` or nothing after) in ``section``."""
    out: list[tuple[bytes, int]] = []
    for at in _lines_starting(mm, prefix, section):
        line_end = mm.find(b"\n", at + 1, section.hi + 1)
        text = mm[at + len(prefix):line_end]
        out.append((text[:-1] if text.endswith(b",") else text, at))
    return out


class _Section:
    """A top-level array of records: ``[lo, hi)`` spans ``[`` to just before its last line ``  ]``."""

    def __init__(self, mm: mmap.mmap, lo: int, hi: int) -> None:
        self.mm, self.lo, self.hi = mm, lo, hi
        self.records: dict[int, Any] = {}

    def record(self, at: int) -> int:
        """Parse the record holding offset ``at`` (kept by its start); returns the start."""
        mm = self.mm
        opening = mm.rfind(_RECORD_OPEN, self.lo, at + 1)
        closing = mm.find(_RECORD_CLOSE, at, self.hi + 1)
        if opening == -1 or closing == -1:
            raise ValueError("a record line outside a record")
        start, end = opening + 5, closing + len(_RECORD_CLOSE)
        if start not in self.records:
            self.records[start] = json.loads(mm[start:end].decode("ascii"))
        return start

    def ordered(self) -> tuple[list[Any], list[int]]:
        starts = sorted(self.records)
        return [self.records[s] for s in starts], starts


def _count_items(path: str, spans: dict[str, tuple[int, list[int]]]) -> dict[str, list[int]]:
    """The index of each record start of ``spans`` (section start, record starts) in its array."""
    out: dict[str, list[int]] = {}
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for name, (lo, starts) in spans.items():
            indexes, count, at = [], 0, lo
            for start in starts:
                # Item lines up to and with this record's own line "    {".
                # (lines at exactly four spaces, less the closing "    }" / "    ]" lines)
                piece = mm[at:start + 1]
                count += piece.count(b"\n    ") - piece.count(b"\n     ") - piece.count(b"\n    }") - piece.count(b"\n    ]")
                indexes.append(count - 1)
                at = start + 1
            out[name] = indexes
    return out


def task_slice(path: str, contract_id: str) -> TaskSlice | None:
    """Read the view of ``contract_id``'s tasks from the manifest at ``path`` without parsing the rest.

    :param path: The manifest's real path.
    :param contract_id: The contract id (= dag_id).
    :returns: The view, or None when the file is not in the compiler's layout, cannot be read,
        or has no ``dags[]`` entry ``contract_id`` (the freshness monitor's task, which reads the
        whole file): the caller then reads the whole file, which also reports what is wrong.
    """
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                return None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                found = _find(mm, contract_id)
    except (OSError, ValueError, RecursionError):
        # RecursionError: a record nested deeper than the json module decodes (about 1,000
        # levels); the whole-file read then refuses the file with a ManifestError.
        return None
    if found is None:
        return None
    skeleton, starts, spans = found
    view, positions = task_view(skeleton, contract_id)
    if set(positions) != {"dags", "assets"}:
        return None
    # task_view's positions index the skeleton's lists; the file's are counted when asked. An
    # inline list (``"assets": []``) was parsed whole, so its positions are the file's already.
    chosen = {name: (spans[name], [starts[name][i] for i in positions[name]]) for name in spans}

    def file_positions() -> dict[str, list[int]]:
        return {**positions, **_count_items(path, chosen)}

    return TaskSlice(view=view, positions=file_positions)


def _other_monitor(mm: mmap.mmap, lo: int, hi: int, contract_id: str) -> str | None:
    """The dag_id of the ``freshness_monitor`` object at ``[lo, hi)`` when it is not ``contract_id``'s.

    Found at its own field line (four spaces); None when it is this task's, or the line is not
    there or not a string (then the section is parsed, for the task or the schema).
    """
    at = mm.find(b'\n    "dag_id": "', lo, hi)
    if at == -1:
        return None
    line_end = mm.find(b"\n", at + 1, hi + 1)
    text = mm[at + len(b'\n    "dag_id": '):line_end].decode("ascii").removesuffix(",")
    value = json.loads(text)
    return value if isinstance(value, str) and value != contract_id else None


def _find(mm: mmap.mmap, contract_id: str) -> tuple[dict[str, Any], dict[str, list[int]], dict[str, int]] | None:
    size = len(mm)
    if mm[:5] != b'{\n  "':
        return None
    end = size - 1 if mm[size - 1:size] == b"\n" else size
    if mm[end - 2:end] != b"\n}":
        return None
    close = end - 2
    decoder = json.JSONDecoder()
    # Walk the top-level fields: each starts at a line '  "key": ', and a multi-line value ends at
    # its line "  ]" or "  }" (an array of records at "    }\n  ]", searched as one long needle).
    fields: dict[str, tuple[int, int]] = {}
    start = 2
    while True:
        head = mm[start:start + 4096].decode("ascii")
        key, key_end = decoder.raw_decode(head, 2)
        if head[key_end:key_end + 2] != ": " or key in fields:
            return None
        lo = start + key_end + 2
        opener = mm[lo:lo + 2]
        if opener == b"[\n":
            if mm[lo + 2:lo + 7] != b"    {":
                return None
            stop = mm.find(_ARRAY_CLOSE, lo, close + 1)
            stop = -1 if stop == -1 else stop + len(_ARRAY_CLOSE)
        elif opener == b"{\n":
            stop = mm.find(_OBJECT_CLOSE, lo, close + 1)
            stop = -1 if stop == -1 else stop + len(_OBJECT_CLOSE)
        else:
            stop = mm.find(b"\n", lo, close + 1)
            if stop != -1 and mm[stop - 1:stop] == b",":
                stop -= 1
        if stop == -1:
            return None
        fields[key] = (lo, stop)
        if stop == close:
            break
        if mm[stop:stop + 5] != b',\n  "':
            return None
        start = stop + 2
    dags, assets = fields.get("dags"), fields.get("assets")
    if dags is None or assets is None:
        return None
    sections: dict[str, _Section] = {}
    skeleton: dict[str, Any] = {}
    for key, (lo, hi) in fields.items():
        skeleton[key] = None  # the file's key order
        if key in ("dags", "assets") and mm[lo:lo + 8] == b"[\n    {\n" and mm[hi - 4:hi] == b"\n  ]":
            sections[key] = _Section(mm, lo, hi - 3)
        elif key == "freshness_monitor" and (other := _other_monitor(mm, lo, hi, contract_id)) is not None:
            skeleton[key] = {"dag_id": other}  # another task's section: task_view leaves it out
        elif key != "edges":
            skeleton[key] = json.loads(mm[lo:hi].decode("ascii"))
    if "dags" not in sections:
        # Inline (``[]``) or not a list: small enough, or the whole file's problem.
        return None
    skeleton["edges"] = []
    dag_section = sections["dags"]
    own_hits = _lines(mm, b'\n      "dag_id": ', json_ascii(contract_id), dag_section.lo, dag_section.hi, first=True)
    if not own_hits:
        return None  # no dags[] entry (the freshness monitor): that task reads the whole file
    own = dag_section.records[dag_section.record(own_hits[0])]
    if not all(isinstance(own.get(k, []), list) for k in ("inlets", "outlets")):
        return None  # the schema's to report, on the whole file
    inlet_set, name_set = task_names(own)
    inlets, names = sorted(inlet_set), sorted(name_set)
    if inlets:
        # One pass over the records' "outlets" lists: a record naming an inlet there is a producer.
        # Every record's outlets must be a list written one item a line (or empty), else a
        # producer could hide in a line this pass does not read: the file is then read whole.
        encoded = {json_ascii(n) for n in inlets}
        for at in _lines_starting(mm, _OUTLETS_LINE, dag_section):
            rest = mm[at + len(_OUTLETS_LINE):at + len(_OUTLETS_LINE) + 1]
            if rest == b"]":
                continue
            if rest != b"\n":
                return None
            items_end = mm.find(b"\n      ]", at + 1, dag_section.hi)
            items = mm[at + len(_OUTLETS_LINE) + 1:items_end].split(b"\n")
            if not encoded.isdisjoint(item.strip().rstrip(b",") for item in items):
                dag_section.record(at)
    # The assets the datasets of those DAGs name (manifest v2: their schema and quality rules).
    for record in dag_section.records.values():
        runtime = record.get("runtime") if isinstance(record, dict) else None
        datasets = runtime.get("datasets") if isinstance(runtime, dict) else None
        if isinstance(datasets, list):
            names += [x["asset"] for x in datasets if isinstance(x, dict) and isinstance(x.get("asset"), str)]
    names = list(dict.fromkeys(names))
    asset_section = sections.get("assets")
    if asset_section is None:
        if not isinstance(skeleton.get("assets"), list):
            return None
    elif names:
        # One pass over the records' "name" lines (every record, as task_view keeps every match).
        wanted = {json_ascii(n): n for n in names}
        found = {wanted[v] for v, at in _values(mm, b'\n      "name": ', asset_section) if v in wanted and asset_section.record(at) >= 0}
        if any(n not in found and not _plain(n) for n in names):
            return None
    starts: dict[str, list[int]] = {}
    spans: dict[str, int] = {}
    for key, section in sections.items():
        skeleton[key], starts[key] = section.ordered()
        spans[key] = section.lo
    return skeleton, starts, spans
