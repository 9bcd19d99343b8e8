"""The runtime's layers and import cycles, checked by import-linter (ARCHITECTURE.md, Layering).

The layers are the ``runtime-layers`` block of ARCHITECTURE.md, top first, written there once:
this test turns the block into an import-linter contract of type ``layers`` over
``contract_runtime`` (peers on one line are independent of each other's order, but may import each
other only without a cycle) and runs ``lint-imports`` on it, plus a contract that no module imports
one of a line above it by any path (``exhaustive``: every module of the package is on a line). A
cycle is refused too, between two modules of one line or inside a package: the ``acyclic_siblings``
contract (import-linter 2.x) over the package.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "contract_runtime"


def runtime_layers(architecture: str) -> list[list[str]]:
    """The ``runtime-layers`` block of ARCHITECTURE.md: one list of module names per line, top first.

    :raises AssertionError: When ARCHITECTURE.md has no such block.
    """
    block = re.search(r"```text runtime-layers\n(.*?)```", architecture, re.DOTALL)
    assert block, "ARCHITECTURE.md has no ```text runtime-layers block"
    return [line.split() for line in block.group(1).splitlines() if line.split()]


def importlinter_config(layers: list[list[str]]) -> str:
    """An import-linter INI config: the layers contract and the no-cycle contract."""
    lines = ["[importlinter]", f"root_package = {PACKAGE}", "", "[importlinter:contract:layers]",
             "name = the runtime's layers (ARCHITECTURE.md)", "type = layers", "containers =", f"    {PACKAGE}",
             "exhaustive = true", "layers ="]
    # import-linter writes peers "a | b" (independent: neither may import the other) or "a : b"
    # (they may import each other); a line of ours is peers of one rank, so ":" (the acyclic
    # contract still refuses a cycle between them).
    lines += [f"    {' : '.join(names)}" for names in layers]
    lines += ["", "[importlinter:contract:acyclic]", "name = no import cycle in the runtime", "type = acyclic_siblings",
              "ancestors =", f"    {PACKAGE}"]
    return "\n".join(lines) + "\n"


def lint(config: str, tmp_path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "importlinter.ini"
    path.write_text(config)
    lint_imports = Path(sys.executable).with_name("lint-imports")
    # The package is found in ``cwd`` only, not through the editable install of the checkout.
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([str(lint_imports), str(path), "--no-cache"], check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_runtime_keeps_its_layers_and_has_no_import_cycle(tmp_path: Path) -> None:
    layers = runtime_layers((ROOT / "ARCHITECTURE.md").read_text())
    modules = {p.stem if p.is_file() else p.name for p in (ROOT / "orchestration" / PACKAGE).iterdir()
               if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert sorted(n for names in layers for n in names) == sorted(modules), "every runtime module on one line"
    result = lint(importlinter_config(layers), tmp_path, ROOT / "orchestration")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


def test_an_upward_import_and_a_cycle_break_the_contracts(tmp_path: Path) -> None:
    """The same config over a small package: ``low`` importing ``top`` breaks the layers, and a
    cycle between two peers (``a`` -> ``b`` -> ``a``) breaks the acyclic contract."""
    package = tmp_path / "src" / PACKAGE
    package.mkdir(parents=True)
    files = {
        "__init__.py": "",
        "top.py": "from contract_runtime import a\n",
        "a.py": "from contract_runtime import b\n",
        "b.py": "def f() -> None:\n    from contract_runtime import a  # noqa: F401\n",
        "low.py": "def g() -> None:\n    from contract_runtime import top  # noqa: F401\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    config = importlinter_config([["top"], ["a", "b"], ["low"]])
    result = lint(config, tmp_path, tmp_path / "src")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0 kept, 2 broken" in result.stdout
    assert "contract_runtime.low is not allowed to import contract_runtime.top" in result.stdout
