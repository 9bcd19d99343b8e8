"""SLOW (about 40-80 s), STARTS A REAL AIRFLOW: ``contract-assets stale`` against Airflow 3.2.

What runs: a :class:`livestack.LiveStack` (``scripts/livestack.py``, the same code as the
live-stack suites and the demo) with a SQLite metadata database and no warehouse, all on
127.0.0.1, in a fresh AIRFLOW_HOME removed afterwards, every process in its own process group,
stopped whatever happens:

* ``airflow db migrate``;
* ``airflow api-server`` on a free loopback port; SimpleAuthManager with the stack's two users
  (``viewer`` for the report, ``admin`` for the cleanup) and a password file, so logins are real
  ``POST /auth/token`` calls (no all-admins mode);
* ``airflow dag-processor`` over ``generated/dags`` of a temporary copy of the bundled project
  (compiled with ``node bin/contract-assets.js compile``): it registers and activates the Assets
  the DAGs declare, re-parses changed files and marks the DAG of a deleted file stale
  (intervals lowered to 1 s, :data:`STALE_SETTINGS`);
* ``airflow scheduler --skip-serve-logs`` (parallelism 1): its ``_update_asset_orphanage`` pass,
  every ``[scheduler] parsing_cleanup_interval`` (1 s here), is what orphans unreferenced assets.

The scenario, and what Airflow 3.2.2 does:

1. Compiled and parsed: every asset the DAGs declare is active, nothing is stale, exit 0.
2. ``contracts/revrec/close_summary.yaml`` removed and dataset ``revrec.deferred_revenue_balance``
   renamed to ``revrec.deferred_revenue`` (``renamed_from``), recompiled (the compiler deletes the
   module). The dag-processor marks DAG ``revrec.close_summary`` stale and drops its schedule and
   outlet references, so the scheduler orphans ``revrec.close_summary`` (orphaned: removal
   complete). It keeps the stale DAG's task *inlet* references (``remove_references_to_deleted_dags``
   does not touch ``task_inlet_asset_reference``), so ``revrec.deferred_revenue_balance``, which that
   DAG read, stays active: stale, exit 1, naming the DAG that holds it.
3. The cleanup the report asks for: ``DELETE /api/v2/dags/revrec.close_summary`` (admin). The
   scheduler orphans the renamed asset; both are orphaned, exit 0.

``runStaleCommand`` (dist/compiler/report/staleCommand.js) is called through a tiny node script
(the CLI wiring of ``stale`` lives elsewhere). The test is skipped, loudly, only when Airflow
cannot start for an environmental reason: Airflow not installed, no loopback port to bind, or an
installed apache-airflow-core 3.2.x whose execution API does not build (the dag-processor then
dies with ``needs a discriminator field``; ``scripts/python-env.sh`` repairs it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagcheck
import pytest
from dagcheck import REPO_ROOT
from livestack import LiveStack, StackUnavailable, free_loopback_port

STALE_JS = REPO_ROOT / "dist" / "compiler" / "report" / "staleCommand.js"
REMOVED_CONTRACT = Path("contracts/revrec/close_summary.yaml")
REMOVED_MODULE = Path("generated/dags/revrec/close_summary.py")
REMOVED_DAG = "revrec.close_summary"
REMOVED_ASSET = "revrec.close_summary"
RENAMED_CONTRACT = Path("contracts/revrec/monthly.yaml")
RENAMED_DAG = "revrec.monthly"
OLD_NAME = "revrec.deferred_revenue_balance"
NEW_NAME = "revrec.deferred_revenue"

#: The stack's SimpleAuthManager users (scripts/livestack.py).
VIEWER = "viewer"
ADMIN = "admin"
START_TIMEOUT_S = 120
CHANGE_TIMEOUT_S = 60

# A node script: import runStaleCommand, run it with the JSON options, exit with its code.
NODE_RUNNER = """
const [moduleUrl, options] = process.argv.slice(1);
const { runStaleCommand } = await import(moduleUrl);
process.exitCode = await runStaleCommand(JSON.parse(options));
"""


# --------------------------------------------------------------------------- helpers


def _ensure_dist() -> None:
    """Build dist/ when staleCommand.js is missing or older than any compiler source."""
    newest_source = max(p.stat().st_mtime for p in (REPO_ROOT / "compiler").rglob("*.ts"))
    if STALE_JS.is_file() and STALE_JS.stat().st_mtime >= newest_source:
        return
    npx = shutil.which("npx")
    assert npx is not None, "npx is not on PATH: build dist/ with `npx tsc -p tsconfig.json`"
    proc = subprocess.run(
        [npx, "--no-install", "tsc", "-p", "tsconfig.json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"tsc failed:\n{proc.stdout}\n{proc.stderr}"


def _skip_environment(reason: str) -> None:
    message = f"ENVIRONMENT: Airflow cannot start here, test_stale_airflow is SKIPPED: {reason}"
    warnings.warn(message, stacklevel=2)
    print(f"\n{'!' * 20} {message} {'!' * 20}", file=sys.stderr)
    pytest.skip(message)


@dataclass
class StaleRun:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        assert self.stdout, f"no report on stdout (exit {self.returncode}); stderr:\n{self.stderr}"
        return json.loads(self.stdout)

    def describe(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


@dataclass
class Airflow:
    """The stale scenario's Airflow: a :class:`livestack.LiveStack` over one project copy."""

    stack: LiveStack
    project: Path

    @property
    def url(self) -> str:
        return self.stack.url

    @property
    def passwords(self) -> dict[str, str]:
        return self.stack.passwords

    def token(self, user: str) -> str:
        return self.stack.token(user)

    def log(self, name: str) -> str:
        return self.stack.log(name)

    def stale(
        self, fmt: str = "json", *, url: str | None = None, token: str | None = None, login: bool = True
    ) -> StaleRun:
        """Run runStaleCommand in node; credentials through the environment unless token is given."""
        env = dagcheck.subprocess_env()
        for key in ("AIRFLOW_TOKEN", "AIRFLOW_USERNAME", "AIRFLOW_PASSWORD"):
            env.pop(key, None)
        if login and token is None:
            env["AIRFLOW_USERNAME"] = VIEWER
            env["AIRFLOW_PASSWORD"] = self.passwords[VIEWER]
        options: dict[str, Any] = {
            "root": str(self.project),
            "airflowUrl": url or self.url,
            "format": fmt,
            "timeoutMs": 15000,
        }
        if token is not None:
            options["token"] = token
        proc = subprocess.run(
            [
                dagcheck.node_executable(),
                "--input-type=module",
                "-e",
                NODE_RUNNER,
                STALE_JS.as_uri(),
                json.dumps(options),
            ],
            cwd=self.project,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
            check=False,
        )
        return StaleRun(proc.returncode, proc.stdout, proc.stderr)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], what: str, timeout: float) -> StaleRun:
        """Run stale until predicate(report) holds: parsing and orphanage run on Airflow's clock."""
        last: list[StaleRun] = []

        def holds() -> StaleRun | None:
            run = self.stale()
            last[:] = [run]
            return run if run.returncode in (0, 1) and predicate(run.json()) else None

        return self.stack.wait(holds, f"{what}\n{last[0].describe() if last else ''}", timeout, interval=1)


#: Settings of this scenario on top of the stack's (orchestration/airflow/deploy/airflow.cfg):
#: one task slot, and parsing, bundle refresh and orphanage every second.
STALE_SETTINGS = {
    "AIRFLOW__CORE__PARALLELISM": "1",
    "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "1",
    "AIRFLOW__DAG_PROCESSOR__BUNDLE_REFRESH_CHECK_INTERVAL": "1",
    "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "1",
    "AIRFLOW__SCHEDULER__PARSING_CLEANUP_INTERVAL": "1",
}


# --------------------------------------------------------------------------- fixture


@pytest.fixture(scope="module")
def airflow() -> Iterator[Airflow]:
    _ensure_dist()
    tmp = Path(tempfile.mkdtemp(prefix="contract-assets-stale-"))
    try:
        project = dagcheck.copy_project(REPO_ROOT, tmp / "project")
        compiled = dagcheck.run_compile(project)
        assert compiled.returncode == 0, compiled.describe()
        stack = LiveStack(
            work=tmp / "stack",
            dags_folder=project / "generated" / "dags",
            metadata="sqlite",
            warehouse="none",
            components=("dag-processor", "scheduler"),
            env_extra=STALE_SETTINGS,
        )
        try:
            stack.start(timeout=START_TIMEOUT_S)
        except StackUnavailable as exc:
            _skip_environment(str(exc))
        try:
            yield Airflow(stack, project)
        finally:
            stack.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- the scenario


def _names(entries: list[dict[str, Any]]) -> list[str]:
    return [e["name"] for e in entries]


def _producing_dags(airflow: Airflow, name: str) -> set[str]:
    """The dag_ids Airflow records as producing asset ``name`` (``GET /api/v2/assets``; its
    ``name_pattern`` is a LIKE pattern, so the exact name is picked here)."""
    assets = airflow.stack.get("/assets", key="assets", name_pattern=name, only_active="false")
    return {t["dag_id"] for a in assets if a["name"] == name for t in a["producing_tasks"]}


def test_stale_against_real_airflow_api_server(airflow: Airflow) -> None:
    started = time.monotonic()
    manifest = json.loads((airflow.project / "generated" / "manifest.json").read_text(encoding="utf-8"))
    dag_assets = {n for d in manifest["dags"] for n in d["inlets"] + d["outlets"]}

    # 1. Parsed by the dag-processor: everything the DAGs declare is active, nothing is stale.
    run = airflow.wait_for(lambda r: r["summary"]["missing"] == 0, "all declared assets active", START_TIMEOUT_S)
    report = run.json()
    assert run.returncode == 0, run.describe()
    assert report["airflow"]["version"].startswith("3.2."), report["airflow"]
    assert report["stale"] == [] and report["orphaned"] == [] and report["foreign"] == [], run.describe()
    assert report["summary"]["in_sync"] == report["summary"]["expected"] == len(dag_assets), report["summary"]
    assert run.stdout == airflow.stale().stdout, "the JSON report is not stable between runs"

    # Authentication and connection errors exit 2 with one line naming the URL, never a secret.
    unauthenticated = airflow.stale(login=False)
    assert unauthenticated.returncode == 2 and unauthenticated.stdout == "", unauthenticated.describe()
    assert "HTTP 401" in unauthenticated.stderr and f"{airflow.url}/api/v2/assets" in unauthenticated.stderr
    refused = airflow.stale(url=f"http://127.0.0.1:{free_loopback_port()}")
    assert refused.returncode == 2 and "cannot connect" in refused.stderr, refused.describe()
    assert airflow.passwords[VIEWER] not in unauthenticated.stderr + refused.stderr
    # A token from POST /auth/token works as --token.
    with_token = airflow.stale(token=airflow.token(VIEWER))
    assert with_token.returncode == 0 and with_token.stdout == run.stdout, with_token.describe()

    # 2. Remove one contract, rename a dataset in another, recompile; Airflow re-parses.
    (airflow.project / REMOVED_CONTRACT).unlink()
    monthly = airflow.project / RENAMED_CONTRACT
    text = monthly.read_text(encoding="utf-8")
    marker = f"  - name: {OLD_NAME.split('.', 1)[1]}\n"
    assert text.count(marker) == 1, f"{RENAMED_CONTRACT} changed: no single '{marker.strip()}'"
    renamed = f"  - name: {NEW_NAME.split('.', 1)[1]}\n    renamed_from: [{OLD_NAME}]\n"
    # A rename is a breaking change: it needs the contract's next major version (CA7701 otherwise).
    assert text.count('\nversion: "1.5.0"\n') == 1, f"{RENAMED_CONTRACT} changed: no single 'version: \"1.5.0\"'"
    text = text.replace('\nversion: "1.5.0"\n', '\nversion: "2.0.0"\n')
    monthly.write_text(text.replace(marker, renamed), encoding="utf-8")
    compiled = dagcheck.run_compile(airflow.project)
    assert compiled.returncode == 0, compiled.describe()
    assert not (airflow.project / REMOVED_MODULE).exists(), "compile did not delete the removed contract's module"

    # "Nothing missing" is not enough: the freshness monitor's module also names every asset, and the
    # dag-processor may parse it first, which activates NEW_NAME while revrec.monthly still holds
    # its old outlet reference to OLD_NAME. So also wait until the renamed DAG's new module is parsed.
    run = airflow.wait_for(
        lambda r: r["summary"]["missing"] == 0
        and REMOVED_ASSET in _names(r["orphaned"])
        and RENAMED_DAG in _producing_dags(airflow, NEW_NAME),
        f"{NEW_NAME} active and produced by {RENAMED_DAG}, and {REMOVED_ASSET} orphaned",
        CHANGE_TIMEOUT_S,
    )
    report = run.json()
    assert run.returncode == 1, run.describe()
    assert [(e["name"], e["reason"]) for e in report["orphaned"]] == [(REMOVED_ASSET, "removed")], run.describe()
    # Airflow 3.2.2 keeps the inlet references of the stale DAG: the renamed asset stays active.
    assert _names(report["stale"]) == [OLD_NAME], run.describe()
    stale = report["stale"][0]
    assert stale["reason"] == "renamed" and stale["renamed_to"] == NEW_NAME, stale
    assert stale["dags"] == stale["dags_not_in_manifest"] == [REMOVED_DAG], stale
    assert report["foreign"] == [], run.describe()
    status, dag = airflow.stack.api("GET", f"/dags/{REMOVED_DAG}", user=VIEWER)
    assert status == 200 and dag["is_stale"] is True, f"{REMOVED_DAG}: {status} {dag}"
    text_run = airflow.stale("text")
    assert text_run.returncode == 1, text_run.describe()
    lines = text_run.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:-1]] == [["stale", OLD_NAME], ["orphaned", REMOVED_ASSET]], (
        text_run.stdout
    )
    assert lines[-1].startswith("1 stale, 1 orphaned, 0 missing, 0 foreign;"), text_run.stdout

    # 3. The cleanup the report asks for: delete the removed DAG; the scheduler orphans the asset.
    status, body = airflow.stack.api("DELETE", f"/dags/{REMOVED_DAG}", user=ADMIN)
    assert status == 204, f"DELETE dag: {status} {body}"
    run = airflow.wait_for(lambda r: r["summary"]["stale"] == 0, "orphanage by the scheduler", CHANGE_TIMEOUT_S)
    report = run.json()
    assert run.returncode == 0, run.describe()
    assert [(e["name"], e["reason"]) for e in report["orphaned"]] == [(REMOVED_ASSET, "removed"), (OLD_NAME, "renamed")]
    assert all(e["dags"] == [] for e in report["orphaned"]), run.describe()
    assert report["missing"] == [] and report["foreign"] == [], run.describe()
    assert report["summary"]["in_sync"] == report["summary"]["expected"] == len(dag_assets) - 1, report["summary"]

    print(
        f"\nstale scenario against Airflow {report['airflow']['version']}: {time.monotonic() - started:.1f} s after start-up"
    )
