"""Runs datacontract-cli's own Python API over many ODCS document pairs in one process.

Run with datacontract-cli's interpreter (``.venv-datacontract/bin/python``), never the project's:
it imports ``datacontract``, which is not installed in ``.venv`` (docs/adr/0014-odcs-bridge.md).

``odcs_peer.py breaking`` reads a JSON list of ``[before_path, after_path]`` pairs on stdin and
writes a JSON list, one entry per pair, ``{"breaking": bool, "errors": ["<rule_id> at <path>", ...]}``,
from ``DataContract.breaking`` (the consumer perspective, the default of ``datacontract breaking``).

``odcs_peer.py lint`` reads a JSON list of paths and writes one entry per path,
``{"result": "passed" | ..., "checks": [[result, name, reason], ...]}``, from ``DataContract.lint``
(what ``datacontract lint`` runs).

References are not inlined, so nothing is fetched from the network.
"""

from __future__ import annotations

import json
import sys

from datacontract.data_contract import DataContract


def lint(paths: list[str]) -> list[dict]:
    out = []
    for path in paths:
        run = DataContract(data_contract_file=path, inline_references=False).lint()
        result = run.result.value if hasattr(run.result, "value") else str(run.result)
        checks = [[c.result.value if hasattr(c.result, "value") else str(c.result), c.name, c.reason] for c in run.checks]
        out.append({"result": result, "checks": checks})
    return out


def breaking(pairs: list[list[str]]) -> list[dict]:
    out = []
    for before, after in pairs:
        result = DataContract(data_contract_file=before, inline_references=False).breaking(
            DataContract(data_contract_file=after, inline_references=False)
        )
        errors = [f"{e.rule_id} at {e.path}" for e in result.entries if str(e.level.value if hasattr(e.level, "value") else e.level) == "error"]
        out.append({"breaking": bool(result.is_breaking), "errors": errors})
    return out


def main() -> None:
    command = sys.argv[1]
    items = json.load(sys.stdin)
    json.dump(lint(items) if command == "lint" else breaking(items), sys.stdout)


if __name__ == "__main__":
    main()
