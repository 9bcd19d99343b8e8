"""SLOW (about 40-80 s), STARTS A REAL AIRFLOW: ``contract-assets stale`` against Airflow 3.2.

What runs, all on 127.0.0.1, in a fresh AIRFLOW_HOME (SQLite) that is removed afterwards, with
every process in its own process group, stopped (SIGTERM, then SIGKILL) whatever happens:

* ``airflow db migrate``;
* ``airflow api-server --apps core`` on a free loopback port; SimpleAuthManager with two users
  (a viewer for the report, an admin for the cleanup) and a password file written here, so logins
  are real ``POST /auth/token`` calls (no all-admins mode);
* ``airflow dag-processor`` over ``generated/dags`` of a temporary copy of the bundled project
  (compiled with ``node bin/contract-assets.js compile``): it registers and activates the Assets
  the DAGs declare, re-parses changed files and marks the DAG of a deleted file stale
  (intervals lowered to 1 s);
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

import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagcheck
import pytest
from dagcheck import REPO_ROOT

STALE_JS = REPO_ROOT / "dist" / "compiler" / "report" / "staleCommand.js"
REMOVED_CONTRACT = Path("contracts/revrec/close_summary.yaml")
REMOVED_MODULE = Path("generated/dags/revrec/close_summary.py")
REMOVED_DAG = "revrec.close_summary"
REMOVED_ASSET = "revrec.close_summary"
RENAMED_CONTRACT = Path("contracts/revrec/monthly.yaml")
OLD_NAME = "revrec.deferred_revenue_balance"
NEW_NAME = "revrec.deferred_revenue"

VIEWER = "stale-viewer"
ADMIN = "stale-admin"
START_TIMEOUT_S = 120
CHANGE_TIMEOUT_S = 60
# Marks of an environment Airflow cannot run in (see the module docstring).
EXECUTION_API_DEFECT = "needs a discriminator field"
BIND_ERRORS = ("address already in use", "cannot assign requested address")

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


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _skip_environment(reason: str) -> None:
    message = f"ENVIRONMENT: Airflow cannot start here, test_stale_airflow is SKIPPED: {reason}"
    warnings.warn(message, stacklevel=2)
    print(f"\n{'!' * 20} {message} {'!' * 20}", file=sys.stderr)
    pytest.skip(message)


def _http_json(method: str, url: str, body: dict[str, Any] | None = None, token: str | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("accept", "application/json")
    if data is not None:
        request.add_header("content-type", "application/json")
    if token is not None:
        request.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read().decode(errors="replace")
        try:
            return error.code, json.loads(text)
        except json.JSONDecodeError:
            return error.code, text


def _tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


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
    """A running Airflow (api-server, dag-processor, scheduler) on loopback over one project."""

    tmp: Path
    project: Path
    env: dict[str, str]
    passwords: dict[str, str]
    url: str = ""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def run_cli(self, *args: str, timeout: float = 180) -> None:
        log = self.tmp / f"airflow-{'-'.join(args[:2])}.log"
        with log.open("a") as out:
            proc = subprocess.run(
                [sys.executable, "-m", "airflow", *args],
                env=self.env,
                cwd=self.tmp,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
        assert proc.returncode == 0, f"airflow {' '.join(args)} failed (exit {proc.returncode}):\n{_tail(log)}"

    def start(self, name: str, *args: str) -> None:
        with (self.tmp / f"{name}.log").open("ab") as log:
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", "airflow", *args],
                env=self.env,
                cwd=self.tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() ends it with its children
            )

    def log(self, name: str) -> str:
        return _tail(self.tmp / f"{name}.log")

    def check_running(self) -> None:
        """Fail (or skip, for an environment Airflow cannot run in) when a process has exited."""
        for name, proc in self.processes.items():
            if proc.poll() is None:
                continue
            log = self.log(name)
            if EXECUTION_API_DEFECT in log:
                _skip_environment(
                    f"airflow {name} dies building the execution API (the apache-airflow-core 3.2.x "
                    f"discriminator defect; run scripts/python-env.sh, which repairs it):\n{log[-2000:]}"
                )
            raise AssertionError(f"airflow {name} exited with {proc.returncode}:\n{log}")

    def stop(self) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 20
        for proc in self.processes.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            # The group may hold children (parsing processes, executor workers) after its leader.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if proc.poll() is None:
                proc.wait(timeout=10)

    def token(self, user: str) -> str:
        status, body = _http_json(
            "POST", f"{self.url}/auth/token", {"username": user, "password": self.passwords[user]}
        )
        assert status == 201 and isinstance(body, dict) and body.get("access_token"), (
            f"login of {user}: {status} {body}"
        )
        return str(body["access_token"])

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
        deadline = time.monotonic() + timeout
        while True:
            self.check_running()
            run = self.stale()
            if run.returncode in (0, 1) and predicate(run.json()):
                return run
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{what}: not reached within {timeout} s\n{run.describe()}\n"
                    f"--- dag-processor log\n{self.log('dag-processor')}\n--- scheduler log\n{self.log('scheduler')}"
                )
            time.sleep(1)


def _airflow_env(home: Path, dags: Path, password_file: Path) -> dict[str, str]:
    env = dagcheck.subprocess_env()
    for key in list(env):
        if key.startswith("AIRFLOW__") or key in ("AIRFLOW_CONFIG", "AIRFLOW_HOME"):
            del env[key]
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "AIRFLOW__CORE__PARALLELISM": "1",
            "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{VIEWER}:viewer,{ADMIN}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(password_file),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "1",
            "AIRFLOW__DAG_PROCESSOR__BUNDLE_REFRESH_CHECK_INTERVAL": "1",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "1",
            "AIRFLOW__SCHEDULER__PARSING_CLEANUP_INTERVAL": "1",
        }
    )
    return env


def _prepare_airflow(tmp: Path, project: Path) -> Airflow:
    """A fresh AIRFLOW_HOME with its password file; nothing runs yet."""
    home = tmp / "airflow-home"
    home.mkdir()
    passwords = {VIEWER: secrets.token_urlsafe(16), ADMIN: secrets.token_urlsafe(16)}
    password_file = home / "passwords.json"
    password_file.write_text(json.dumps(passwords) + "\n", encoding="utf-8")
    env = _airflow_env(home, project / "generated" / "dags", password_file)
    return Airflow(tmp=tmp, project=project, env=env, passwords=passwords)


def _start_airflow(airflow: Airflow) -> None:
    """Migrate the DB, start the dag-processor, the scheduler and the api-server; wait for health."""
    airflow.run_cli("db", "migrate")
    airflow.start("dag-processor", "dag-processor")
    airflow.start("scheduler", "scheduler", "--skip-serve-logs")
    for attempt in (1, 2):
        port = _free_loopback_port()
        airflow.url = f"http://127.0.0.1:{port}"
        airflow.start("api-server", "api-server", "--apps", "core", "-H", "127.0.0.1", "-p", str(port), "-w", "1")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and airflow.processes["api-server"].poll() is None:
            try:
                status, body = _http_json("GET", f"{airflow.url}/api/v2/monitor/health")
                if status == 200 and body["metadatabase"]["status"] == "healthy":
                    return
            except (OSError, KeyError, TypeError):
                pass
            time.sleep(0.3)
        log = airflow.log("api-server")
        if any(e in log.lower() for e in BIND_ERRORS):
            if attempt == 1:  # the free port was taken meanwhile: once more on another one
                airflow.processes.pop("api-server").wait(timeout=30)
                continue
            _skip_environment(f"cannot bind a loopback port for the api-server:\n{log}")
        airflow.check_running()
        raise AssertionError(f"airflow api-server did not become healthy within {START_TIMEOUT_S} s:\n{log}")


# --------------------------------------------------------------------------- fixture


@pytest.fixture(scope="module")
def airflow() -> Iterator[Airflow]:
    if importlib.util.find_spec("airflow") is None:
        _skip_environment(f"apache-airflow is not installed for {sys.executable} (run scripts/python-env.sh)")
    _ensure_dist()
    tmp = Path(tempfile.mkdtemp(prefix="contract-assets-stale-"))
    server: Airflow | None = None
    try:
        project = dagcheck.copy_project(REPO_ROOT, tmp / "project")
        compiled = dagcheck.run_compile(project)
        assert compiled.returncode == 0, compiled.describe()
        server = _prepare_airflow(tmp, project)
        _start_airflow(server)
        yield server
    finally:
        if server is not None:
            server.stop()  # also after a failed or skipped start
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- the scenario


def _names(entries: list[dict[str, Any]]) -> list[str]:
    return [e["name"] for e in entries]


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
    refused = airflow.stale(url=f"http://127.0.0.1:{_free_loopback_port()}")
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
    monthly.write_text(text.replace(marker, renamed), encoding="utf-8")
    compiled = dagcheck.run_compile(airflow.project)
    assert compiled.returncode == 0, compiled.describe()
    assert not (airflow.project / REMOVED_MODULE).exists(), "compile did not delete the removed contract's module"

    run = airflow.wait_for(
        lambda r: r["summary"]["missing"] == 0 and REMOVED_ASSET in _names(r["orphaned"]),
        f"{NEW_NAME} active and {REMOVED_ASSET} orphaned",
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
    status, dag = _http_json("GET", f"{airflow.url}/api/v2/dags/{REMOVED_DAG}", token=airflow.token(VIEWER))
    assert status == 200 and dag["is_stale"] is True, f"{REMOVED_DAG}: {status} {dag}"
    text_run = airflow.stale("text")
    assert text_run.returncode == 1, text_run.describe()
    lines = text_run.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:-1]] == [["stale", OLD_NAME], ["orphaned", REMOVED_ASSET]], (
        text_run.stdout
    )
    assert lines[-1].startswith("1 stale, 1 orphaned, 0 missing, 0 foreign;"), text_run.stdout

    # 3. The cleanup the report asks for: delete the removed DAG; the scheduler orphans the asset.
    status, body = _http_json("DELETE", f"{airflow.url}/api/v2/dags/{REMOVED_DAG}", token=airflow.token(ADMIN))
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
