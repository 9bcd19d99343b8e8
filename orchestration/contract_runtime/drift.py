"""Schema drift of ingestion sources: the column-level diff and the proposed contract (DESIGN §3.2).

The *observed* schema is what the source has: the columns of each file read (DuckDB's
``describe`` of ``read_csv``/``read_json``/``read_parquet``) or of the extract query's result.
:func:`schema_diff` compares it with the contract's ``schema.properties``:

- **added**: observed columns the contract lacks;
- **removed**: contract columns the source lacks;
- **type changed**: a column whose observed type does not convert to its contract type. Only
  self-describing types count: Parquet and database columns always; JSON lines only for JSON's
  own types (numbers, booleans, strings — JSON has no date); CSV never (every CSV value is text).

What a diff does (``on_schema_drift``):

- ``abort``: any difference fails the task;
- ``allow_additive`` (and no ``on_schema_drift``): added columns are ignored and reported
  (log, produce summary); a removed or type-changed column fails the task.

A failure raises :class:`SchemaDriftError` (a producer error: no retry) whose message carries the
diff and where the **proposed contract** was written (:func:`write_proposal`): the contract's
YAML with the observed columns, ``schema.version`` bumped and a header saying when and from
which run. ``contract-assets drift apply PROPOSAL`` merges it into the contract file and sets the
contract's ``version`` the change needs, from the compiler's own version rules (ADR 0015: a
removed or retyped column the next major, an added one the next minor; the proposal leaves the
version as written, since only the compiler knows the published state it is compared with).
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract_runtime.errors import ProducerError

__all__ = ["SchemaDiff", "SchemaDriftError", "logical_type", "proposal_location", "schema_diff", "write_proposal"]

#: Contract logical type -> observed logical types that convert to it without loss of meaning.
_ACCEPTS: Mapping[str, frozenset[str]] = {
    "string": frozenset({"string", "date", "timestamp", "time"}),
    "integer": frozenset({"integer"}),
    "number": frozenset({"integer", "number"}),
    "boolean": frozenset({"boolean"}),
    "date": frozenset({"date"}),
    "timestamp": frozenset({"timestamp", "date"}),
    "time": frozenset({"time"}),
    "object": frozenset({"object"}),
    "array": frozenset({"array"}),
}
#: Observed types that JSON itself carries (others are DuckDB guesses from strings).
_JSON_NATIVE: frozenset[str] = frozenset({"integer", "number", "boolean", "string", "object", "array"})


class SchemaDriftError(ProducerError):
    """The source's columns differ from the contract in a way ``on_schema_drift`` does not allow.

    :ivar diff: The column-level diff.
    :ivar proposal: Where the proposed contract was written (URI or path), or None.
    """

    def __init__(self, message: str, diff: SchemaDiff, proposal: str | None) -> None:
        super().__init__(message)
        self.diff = diff
        self.proposal = proposal


@dataclass
class SchemaDiff:
    """Column-level difference between the contract and the observed schema.

    :ivar added: ``[(column, observed logical type)]`` in source order.
    :ivar removed: Contract columns the source lacks, in contract order.
    :ivar changed: ``[(column, contract logical type, observed logical type)]``.
    :ivar observed: The whole observed schema ``[(column, logical type)]``, source order.
    """

    added: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[tuple[str, str, str]] = field(default_factory=list)
    observed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """No difference at all."""
        return not (self.added or self.removed or self.changed)

    def blocking(self, mode: str | None) -> bool:
        """Whether this diff fails the task under ``on_schema_drift: mode``."""
        if mode == "abort":
            return not self.empty
        return bool(self.removed or self.changed)

    def describe(self) -> str:
        """One line: ``added [a (integer)]; removed [b]; type changed [c: string -> integer]``."""
        added = ", ".join(f"{n} ({t})" for n, t in self.added)
        changed = ", ".join(f"{n}: {c} -> {o}" for n, c, o in self.changed)
        return f"added [{added}]; removed [{', '.join(self.removed)}]; type changed [{changed}]"

    def summary(self) -> dict[str, Any]:
        """JSON-able ``{"added": [{"name", "type"}], "removed": [names], "changed": [{"name", "contract", "observed"}]}``."""
        return {
            "added": [{"name": n, "type": t} for n, t in self.added],
            "removed": list(self.removed),
            "changed": [{"name": n, "contract": c, "observed": o} for n, c, o in self.changed],
        }


def logical_type(duckdb_type: str) -> str:
    """The contract ``logicalType`` of a DuckDB column type (``DECIMAL(18,2)`` -> ``number``)."""
    t = duckdb_type.upper().strip()
    if re.match(r"^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|INT\d+|U?HUGEINT|UBIGINT)$", t):
        return "integer"
    if t.startswith(("DECIMAL", "NUMERIC", "DOUBLE", "FLOAT", "REAL")):
        return "number"
    if t == "BOOLEAN":
        return "boolean"
    if t == "DATE":
        return "date"
    if t.startswith("TIMESTAMP"):
        return "timestamp"
    if t.startswith("TIME"):
        return "time"
    if t.endswith("[]") or t.startswith(("LIST", "ARRAY")):
        return "array"
    if t.startswith(("STRUCT", "MAP", "JSON")):
        return "object"
    return "string"


def schema_diff(properties: Sequence[Mapping[str, Any]], observed: Sequence[tuple[str, str]], fmt: str) -> SchemaDiff:
    """Compare the contract's properties with observed ``[(column, DuckDB type)]`` (module doc).

    :param fmt: ``csv``, ``jsonl``, ``parquet`` or ``database``: which type differences count.
    """
    logical = [(name, logical_type(t)) for name, t in observed]
    have = dict(logical)
    wanted = {str(p["name"]): str(p.get("logicalType", "string")) for p in properties}
    diff = SchemaDiff(observed=logical)
    diff.added = [(n, t) for n, t in logical if n not in wanted]
    diff.removed = [n for n in wanted if n not in have]
    if fmt != "csv":
        for name, contract_type in wanted.items():
            seen = have.get(name)
            if seen is None:
                continue
            if fmt == "jsonl" and seen not in _JSON_NATIVE:
                continue
            if fmt == "jsonl" and seen == "string" and contract_type in ("date", "timestamp", "time"):
                continue
            if seen not in _ACCEPTS.get(contract_type, frozenset({contract_type})):
                diff.changed.append((name, contract_type, seen))
    return diff


def proposal_location(runtime: Mapping[str, Any], warehouse_dir: str | None, project_root: str) -> tuple[str, str | None]:
    """Where proposals go: ``(URI or local folder, Connection id)``.

    ``runtime["proposals"]`` (the orchestration config's ``proposals: {uri, connection_id}``) when
    compiled in; a relative path there is relative to the project root. Default: a ``proposals``
    folder beside the warehouse (the DuckDB file's folder), else under the project root.
    """
    configured = runtime.get("proposals") or {}
    uri = str(configured.get("uri") or "")
    if uri:
        if "://" not in uri and not os.path.isabs(uri):
            uri = os.path.join(project_root, uri)
        return uri, configured.get("connection_id")
    return os.path.join(warehouse_dir or project_root, "proposals"), None


def _proposed_document(contract: dict[str, Any], dataset: str, diff: SchemaDiff) -> dict[str, Any]:
    for ds in contract.get("datasets") or []:
        if ds.get("name") != dataset:
            continue
        schema = ds.setdefault("schema", {})
        by_name = {str(p["name"]): p for p in schema.get("properties") or []}
        changed = {n: o for n, _, o in diff.changed}
        properties: list[dict[str, Any]] = []
        for name, observed_type in diff.observed:
            prop = dict(by_name.get(name) or {"name": name, "logicalType": observed_type})
            if name in changed:
                prop["logicalType"] = changed[name]
                prop.pop("physicalType", None)
            properties.append(prop)
        schema["properties"] = properties
        schema["version"] = int(schema.get("version") or 0) + 1
    return contract


def write_proposal(
    *,
    contract: dict[str, Any],
    contract_file: str,
    dataset: str,
    diff: SchemaDiff,
    run_id: str,
    dag_id: str,
    location: tuple[str, str | None],
    file_stem: str,
) -> str:
    """Write the proposed contract for ``dataset``; returns its URI or path.

    :param contract: The contract document as written (parsed YAML); it is changed in place.
    :param contract_file: The contract's project-relative path (named in the header).
    :param location: From :func:`proposal_location`.
    :param file_stem: Unique per run (``<contract id>.<run hash>``).
    :raises contract_runtime.objectstore.ObjectStoreError: When the proposal cannot be written.
    """
    import yaml

    from contract_runtime import objectstore

    proposed = _proposed_document(contract, dataset, diff)
    now = datetime.datetime.now(tz=datetime.UTC).isoformat(timespec="seconds")
    header = (
        "# Proposed by contract-assets from observed schema drift; review, then merge with\n"
        f"#   contract-assets drift apply <this file>\n"
        f"# contract: {contract_file} (dataset {dataset})\n"
        f"# observed: {now} by DAG {dag_id}, run {run_id}\n"
        f"# diff: {diff.describe()}\n"
        "# version: left as written; drift apply sets the version this change needs (a removed or\n"
        "#   retyped column the next major, an added column the next minor)\n"
    )
    text = header + yaml.safe_dump(proposed, sort_keys=False, allow_unicode=True, width=120)
    base, conn_id = location
    name = f"{file_stem}.yaml"
    if "://" in base:
        uri = objectstore.join_uri(base, name)
        objectstore.write_bytes(uri, conn_id, text.encode("utf-8"), contract_id=dag_id)
        return uri
    os.makedirs(base, exist_ok=True)
    path = os.path.join(base, name)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return path
