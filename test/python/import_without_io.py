"""Run generated DAG modules with file-system I/O and process spawning forbidden.

Used by test_generated_dags.py as a subprocess script (not a test module)::

    python import_without_io.py MODULE.py [MODULE.py ...]

First ``airflow.sdk`` and ``contract_runtime.operators`` are imported (their own
import-time work is allowed), together with the ``airflow.sdk`` names a generated
module imports (``airflow.sdk`` loads them lazily, so resolving them is part of
importing ``airflow.sdk``, not work done by the generated module). Then
``builtins.open``, ``io.open``, ``os.open``, ``os.listdir`` and ``os.scandir`` are
replaced by functions that raise, as are ``os.system``, ``os.popen``,
``os.posix_spawn``/``os.posix_spawnp`` and ``subprocess.Popen`` (a generated
module must not start anything), and each module is run with
``runpy.run_path``. ``runpy`` reads the module's own source through
``io.open_code``, which is left alone; so is the import system, which uses the
``posix`` functions directly, not the ``os`` attributes patched here.

Prints one line ``RESULT <json>`` to stdout: ``{path: {"ok": bool, "dag_id": str |
None, "blocked": [calls], "error": traceback | None}}``. Exit status 0 whatever the
outcome; the test reads the JSON.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import runpy
import subprocess
import sys
import traceback

import airflow.sdk
import contract_runtime.operators  # noqa: F401  (imported before the patches on purpose)

# Resolve the lazily exported names a generated module uses before patching.
for _name in ("DAG", "Asset", "AssetAll", "AssetAny", "AssetOrTimeSchedule", "CronTriggerTimetable"):
    getattr(airflow.sdk, _name)


class ForbiddenAtImport(Exception):
    """Raised by a patched function: a generated module did I/O or spawned a process."""


def main(paths: list[str]) -> None:
    blocked: list[str] = []

    def guard(label: str):
        def forbidden(*args, **kwargs):
            blocked.append(f"{label}{args!r}")
            raise ForbiddenAtImport(f"{label} called at import time with {args!r}")

        return forbidden

    targets = [
        (builtins, "open", "builtins.open"),
        (io, "open", "io.open"),
        (os, "open", "os.open"),
        (os, "listdir", "os.listdir"),
        (os, "scandir", "os.scandir"),
        (os, "system", "os.system"),
        (os, "popen", "os.popen"),
        (os, "posix_spawn", "os.posix_spawn"),
        (os, "posix_spawnp", "os.posix_spawnp"),
        (subprocess, "Popen", "subprocess.Popen"),
    ]
    originals = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in targets if hasattr(mod, attr)]
    results: dict[str, dict] = {}
    for path in paths:
        blocked.clear()
        for mod, attr, label in targets:
            if hasattr(mod, attr):
                setattr(mod, attr, guard(label))
        try:
            namespace = runpy.run_path(path, run_name="__contract_assets_generated__")
            dag = namespace.get("dag")
            results[path] = {
                "ok": not blocked,
                "dag_id": getattr(dag, "dag_id", None),
                "blocked": list(blocked),
                "error": None,
            }
        except BaseException:  # noqa: BLE001  (report everything, including SystemExit)
            error = traceback.format_exc()
            results[path] = {"ok": False, "dag_id": None, "blocked": list(blocked), "error": error}
        finally:
            for mod, attr, real in originals:
                setattr(mod, attr, real)
    sys.stdout.write("RESULT " + json.dumps(results) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
