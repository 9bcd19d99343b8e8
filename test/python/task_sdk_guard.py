"""Run one contract's write-audit-publish through the operators with Airflow's core out of reach.

Used by test_task_sdk_only.py as a subprocess script (not a test module)::

    python task_sdk_guard.py MANIFEST CONTRACT_ID ASSET_NAME ASSET_URI

What a worker process of Airflow 3 has loaded before a task's ``execute`` is imported first:
``airflow.sdk`` and the generated module's ``contract_runtime.operators`` (in this environment
``import airflow`` also loads the core, ``airflow.settings`` and ``airflow.models`` among it: the
core package is installed beside the Task SDK, as on most workers). Then, for the task path only:

* a ``sys.meta_path`` finder refuses to load any module of Airflow's core (``airflow.*`` but
  ``airflow.sdk*``, ``airflow.providers*`` and ``airflow.version``) or ``sqlalchemy.orm`` that is
  not loaded yet, as on
  a worker with the Task SDK only: the load raises ``ImportError`` (a provider's compatibility
  shim that tries the core first, ``airflow.providers.common.compat.module_loading``, then takes
  the SDK's, as it does there); each refusal is listed in ``refused``;
* ``builtins.__import__`` and ``importlib.import_module`` record every import of such a module
  made from a ``contract_runtime`` module, also of one already loaded (the finder cannot see those);
* ``sqlalchemy.orm.Session.__init__`` and ``sqlalchemy.engine.Engine.connect`` raise and are
  recorded: no metadata-database session or connection is opened, by anyone;

and ``produce``, ``audit`` and ``publish`` run with a hand-made task context (the ``ti``'s XComs,
``outlet_events``), lineage on (a file transport from the environment), then the failure callback.

Prints one line ``RESULT <json>``: ``{"results": {task_id: return value, "asset_event_extra"},
"new_core_modules": [names], "violations": [str], "refused": [names], "refused_by": [[name,
the module that asked]], "error": traceback | None}``. A violation is an import of the core by a ``contract_runtime`` module, or a session or
connection opened. Exit status 0 whatever the outcome.
"""

from __future__ import annotations

import builtins
import datetime
import importlib
import importlib.abc
import json
import sys
import traceback
from typing import Any

import contract_runtime.operators
from airflow.sdk import Asset
from airflow.sdk.execution_time.context import OutletEventAccessors

#: Module prefixes a task may load or import: the Task SDK, the providers (whose hooks the
#: SDK's ``Connection.get_hook()`` returns; on Airflow 3 they reach Airflow through
#: ``airflow.providers.common.compat.sdk``, i.e. the SDK) and ``airflow.version``, the version
#: string the providers compare against (``airflow.providers.amazon.version_compat``: ``from
#: airflow import __version__``), which holds nothing but it.
ALLOWED = ("airflow.sdk", "airflow.providers", "airflow.version")


def forbidden(name: str) -> bool:
    """Whether a module name is Airflow's core (or SQLAlchemy's ORM), which a task must not use."""
    if name == "airflow" or name.startswith(ALLOWED):
        return False
    return name == "sqlalchemy.orm" or name.startswith(("airflow.", "sqlalchemy.orm."))


class RefuseCore(importlib.abc.MetaPathFinder):
    """Refuses to find any forbidden module that is not loaded yet."""

    def __init__(self, refused: list[str], refused_by: list[list[str]]) -> None:
        self.refused = refused
        self.refused_by = refused_by

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if forbidden(fullname):
            self.refused.append(fullname)
            # who asked: the first frame outside the import machinery and this script
            frame = sys._getframe(1)
            while frame is not None and frame.f_globals.get("__name__", "").startswith(("importlib", "_frozen_importlib", "__main__")):
                frame = frame.f_back
            self.refused_by.append([fullname, str(frame.f_globals.get("__name__")) if frame is not None else "?"])
            raise ImportError(f"task code loaded {fullname}: Airflow's core is out of reach at task time")


class FakeTI:
    """The task instance's part the operators use: identity and XCom."""

    def __init__(self, task_id: str, xcoms: dict[tuple[str, str], Any]) -> None:
        self.dag_id = sys.argv[2]
        self.run_id = "manual__2026-04-15T00:00:00+00:00"
        self.task_id = task_id
        self.try_number = 1
        self.max_tries = 0
        self.map_index = -1
        self.xcoms = xcoms

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcoms[(self.task_id, key)] = json.loads(json.dumps(value))

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        return self.xcoms.get((task_ids, key))


class FakeDagRun:
    run_after = datetime.datetime(2026, 4, 15, tzinfo=datetime.UTC)
    logical_date = datetime.datetime(2026, 4, 15, tzinfo=datetime.UTC)
    clear_number = 0


def main(manifest: str, contract_id: str, asset_name: str, asset_uri: str) -> None:
    violations: list[str] = []
    refused: list[str] = []
    refused_by: list[list[str]] = []
    results: dict[str, Any] = {}
    error: str | None = None
    outlet = Asset(name=asset_name, uri=asset_uri)
    operators = contract_runtime.operators
    tasks = [
        operators.ProduceOperator(task_id="produce", contract_id=contract_id, manifest_path=manifest),
        operators.AuditOperator(task_id="audit", contract_id=contract_id, manifest_path=manifest),
        operators.PublishOperator(task_id="publish", contract_id=contract_id, manifest_path=manifest, outlets=[outlet]),
    ]
    before = set(sys.modules)

    real_import = builtins.__import__
    real_import_module = importlib.import_module

    def caller_is_runtime(module_globals: Any) -> bool:
        name = (module_globals or {}).get("__name__", "") if isinstance(module_globals, dict) else ""
        return isinstance(name, str) and name.startswith("contract_runtime")

    def guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and caller_is_runtime(globals):
            for target in [name, *(f"{name}.{item}" for item in (fromlist or ()) if item != "*")]:
                if forbidden(target):
                    violations.append(f"{globals.get('__name__')} imports {target}")
        return real_import(name, globals, locals, fromlist, level)

    def guarded_import_module(name: str, package: str | None = None) -> Any:
        if caller_is_runtime(sys._getframe(1).f_globals) and forbidden(name):
            violations.append(f"{sys._getframe(1).f_globals.get('__name__')} import_module({name!r})")
        return real_import_module(name, package)

    import sqlalchemy.engine
    import sqlalchemy.orm

    def refuse(what: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            stack = "".join(traceback.format_stack(limit=12))
            violations.append(f"{what}\n{stack}")
            raise RuntimeError(f"{what} at task time: a worker of Airflow 3 talks to the API server only")

        return refused

    patched = [
        (sqlalchemy.orm.Session, "__init__", refuse("a SQLAlchemy Session opened")),
        (sqlalchemy.engine.Engine, "connect", refuse("a SQLAlchemy Engine connected")),
        (builtins, "__import__", guarded_import),
        (importlib, "import_module", guarded_import_module),
    ]
    originals = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in patched]
    finder = RefuseCore(refused, refused_by)
    sys.meta_path.insert(0, finder)
    for owner, attr, replacement in patched:
        setattr(owner, attr, replacement)
    try:
        xcoms: dict[tuple[str, str], Any] = {}
        for task in tasks:
            ti = FakeTI(task.task_id, xcoms)
            context: dict[str, Any] = {
                "ti": ti,
                "dag_run": FakeDagRun(),
                "logical_date": FakeDagRun.logical_date,
                "outlet_events": OutletEventAccessors(),
            }
            value = task.execute(context)
            xcoms[(task.task_id, "return_value")] = value
            results[task.task_id] = value
            if task.task_id == "publish":
                results["asset_event_extra"] = context["outlet_events"][outlet].extra
        # the failure callback of the same operators (FAIL event), as Airflow would call it
        operators.lineage_on_failure(
            {"task": tasks[0], "ti": FakeTI("produce", xcoms), "dag_run": FakeDagRun(), "exception": ValueError("x")}
        )
    except BaseException:  # noqa: BLE001 - report everything
        error = traceback.format_exc()
    finally:
        for owner, attr, real in originals:
            setattr(owner, attr, real)
        sys.meta_path.remove(finder)
    new_core = sorted(name for name in set(sys.modules) - before if forbidden(name))
    sys.stdout.write(
        "RESULT "
        + json.dumps({"results": results, "new_core_modules": new_core, "violations": violations, "refused": refused, "refused_by": refused_by, "error": error}, default=str)
        + "\n"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main(*sys.argv[1:5])
