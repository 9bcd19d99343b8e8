"""Regenerate a dbt project's committed ``manifest.json`` (what the compiler and runtime read).

    bash scripts/dbt-parse.sh dbt/finance

Runs ``dbt parse`` (from ``.venv-dbt``) with a throw-away in-memory DuckDB profile (parsing needs a
profile but no warehouse), then writes ``<project>/manifest.json`` in a form that is the same on
every machine and holds no local path: the run's ids and times are fixed, the project's absolute
path becomes ``.``, and only the project's own macros and docs are kept (dbt's built-in macros are
installed with dbt and their entries carry the installation's path). The file stays a manifest
dbt reads (``--state``): its nodes, sources, seeds and tests are untouched.

Run it with the dbt environment's Python (scripts/dbt-parse.sh does). Exit 0 written, 1 dbt failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def _replace(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    return value


def normalise(manifest: dict[str, Any], project_dir: Path) -> dict[str, Any]:
    """The manifest without machine-specific values (see the module doc)."""
    project = manifest["metadata"]["project_name"]
    manifest["macros"] = {k: v for k, v in manifest.get("macros", {}).items() if v.get("package_name") == project}
    manifest["docs"] = {k: v for k, v in manifest.get("docs", {}).items() if v.get("package_name") == project}
    metadata = manifest["metadata"]
    metadata["generated_at"] = "2000-01-01T00:00:00.000000Z"
    metadata["invocation_id"] = "00000000-0000-0000-0000-000000000000"
    metadata["invocation_started_at"] = None
    metadata["run_started_at"] = None
    metadata["env"] = {}
    metadata["user_id"] = None
    manifest = _replace(manifest, str(project_dir.resolve()), ".")
    for section in ("nodes", "sources", "exposures", "metrics", "semantic_models", "saved_queries", "unit_tests"):
        for node in manifest.get(section, {}).values():
            if not isinstance(node, dict):
                continue
            if "created_at" in node:
                node["created_at"] = 0.0
            # dbt fills these from sets: their order differs between two parses of the same files
            depends_on = node.get("depends_on") or {}
            for key in ("nodes", "macros"):
                if isinstance(depends_on.get(key), list):
                    depends_on[key] = sorted(depends_on[key])
            if isinstance(node.get("sources"), list):
                node["sources"] = sorted(node["sources"])
    for key in ("parent_map", "child_map", "group_map"):
        if isinstance(manifest.get(key), dict):
            manifest[key] = {k: sorted(v) for k, v in sorted(manifest[key].items())}
    return manifest


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: dbt_parse.py <dbt project folder>", file=sys.stderr)
        return 2
    project_dir = Path(argv[0]).resolve()
    dbt = Path(sys.executable).parent / "dbt"
    with tempfile.TemporaryDirectory(prefix="ca-dbt-parse-") as work:
        profile = None
        for line in (project_dir / "dbt_project.yml").read_text(encoding="utf-8").splitlines():
            if line.startswith("profile:"):
                profile = line.split(":", 1)[1].split("#", 1)[0].strip().strip("'\"")
        if not profile:
            print(f"{project_dir}/dbt_project.yml names no profile", file=sys.stderr)
            return 1
        Path(work, "profiles.yml").write_text(
            f'"{profile}":\n  target: parse\n  outputs:\n    parse:\n      type: duckdb\n      path: ":memory:"\n'
            "      schema: main\n",
            encoding="utf-8",
        )
        env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "False"}
        proc = subprocess.run(
            [str(dbt), "parse", "--project-dir", str(project_dir), "--profiles-dir", work, "--target-path",
             str(Path(work, "target")), "--log-path", str(Path(work, "logs")), "--no-version-check",
             "--no-partial-parse"],
            env=env, check=False, stdin=subprocess.DEVNULL,
        )
        if proc.returncode != 0:
            return 1
        manifest = json.loads(Path(work, "target", "manifest.json").read_text(encoding="utf-8"))
    out = project_dir / "manifest.json"
    text = json.dumps(normalise(manifest, project_dir), indent=1) + "\n"
    out.write_text(text, encoding="utf-8")
    shutil.rmtree(project_dir / "target", ignore_errors=True)
    print(f"wrote {out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
