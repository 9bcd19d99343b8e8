"""A live Airflow 3.2 stack on loopback, started and stopped by the project's own code.

Used by the pytest session fixture ``live_stack`` (``test/python/conftest.py``), by the
live-stack suites and by ``npm run demo`` (``scripts/demo.sh`` runs ``python
scripts/livestack.py demo``). Nothing here imports Airflow: every component is a child process.

What :class:`LiveStack` starts, all bound to 127.0.0.1 on ports the OS hands out, every
process in its own process group, stopped (SIGTERM, then SIGKILL of the group) by
:meth:`LiveStack.stop` whatever happened:

1. PostgreSQL (:class:`PostgresServer`, ``initdb`` + ``pg_ctl`` into a temporary folder, as the
   ``postgres`` system user via ``runuser`` when run as root) holding two databases: ``airflow``
   (the metadata database) and ``warehouse`` (the warehouse Connection ``warehouse`` of the
   generated DAGs, when ``warehouse="postgres"``). ``metadata="sqlite"`` skips the server for
   the metadata database (``test_stale_airflow.py`` uses that for a stack without tasks).
2. A fresh ``AIRFLOW_HOME`` whose ``AIRFLOW_CONFIG`` is ``orchestration/airflow/deploy/airflow.cfg``
   (the one place the stack's Airflow settings live; ``docs/deploy.md`` quotes it), with the
   per-instance values (database URL, DAG folder, api-server URL, JWT secret, users) in the
   environment of every component (:meth:`LiveStack.env`).
3. ``airflow db migrate``, then ``airflow api-server`` (core and execution APIs; the workers of
   the LocalExecutor report to its ``/execution/`` API), ``airflow scheduler`` (LocalExecutor),
   ``airflow dag-processor`` and ``airflow triggerer``.

Readiness is polled, never slept: ``GET /api/v2/monitor/health`` until the metadatabase and
every started component (scheduler, triggerer, dag_processor) report ``healthy``; then
:meth:`LiveStack.wait_for_dags` until the dag-processor has registered the DAG ids asked for.
Every wait is bounded (``timeout`` seconds, then an ``AssertionError`` — or
:class:`StackUnavailable` for an environment that cannot run Airflow — carrying the tails of the
component logs). Logs stay in ``<work>/logs`` and the work folder is kept when the stack failed
(:attr:`LiveStack.failed`), removed otherwise (unless ``keep=True``).

REST client (SimpleAuthManager, real ``POST /auth/token`` logins; users ``admin`` and ``viewer``):

* ``stack.api(method, path, body=None, user="admin") -> (status, json)`` — any ``/api/v2`` call;
  ``stack.get(path, **params)`` — a GET that must return 200, paged lists followed to the end.
* ``stack.dags()``, ``stack.unpause(dag_id)``, ``stack.trigger(dag_id, logical_date=None,
  conf=None) -> run`` (a ``manual`` run), ``stack.dag_runs(dag_id="~") -> [run]`` (each with
  ``dag_id``, ``dag_run_id``, ``run_type``, ``state``, ``queued_at``, ``start_date``,
  ``end_date``, ``run_after``), ``stack.triggering_events(dag_id, run_id) -> [event]``
  (``GET .../upstreamAssetEvents``), ``stack.asset_events() -> [event]`` (each with
  ``asset_id``, ``uri``, ``name``, ``extra``, ``source_dag_id``, ``source_run_id``,
  ``timestamp``), ``stack.task_instances(dag_id, run_id)``, ``stack.task_log(dag_id, run_id,
  task_id, try_number=1) -> str``.
* ``stack.wait_until_quiescent(timeout=..., settle=...)`` — returns once no DAG run is queued
  or running and no new DAG run or Asset event has appeared for ``settle`` seconds (a few
  scheduler loops, so an asset-triggered run about to be created is not missed).
* ``stack.add_project(name, project)`` — copy a compiled project's ``generated/`` (and its
  ``orchestration/sample_data``) into the ``projects`` DAG bundle, a second LocalDagBundle the
  dag-processor watches, so a test can bring DAGs of its own (their dag_ids and asset names must
  not collide with the bundled corpus) without a second stack.
* ``stack.commit_project(project, message) -> commit`` — the same into the ``git`` bundle (a
  ``GitDagBundle`` over a local repository, when the stack has ``git_bundle``): runs started from
  it carry the commit as their bundle version.

Command line (for the demo and for a person)::

    python scripts/livestack.py up [--warehouse duckdb|postgres] [--work DIR]
        starts a stack over generated/dags, prints its URL and admin password, runs until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import glob
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The stack's Airflow settings (AIRFLOW_CONFIG); docs/deploy.md quotes this file.
AIRFLOW_CFG = REPO_ROOT / "orchestration" / "airflow" / "deploy" / "airflow.cfg"
SHIMS = REPO_ROOT / "test" / "python" / "shims"
JOBS = REPO_ROOT / "orchestration" / "jobs"
#: The folder whose sitecustomize.py shifts a Python process's clock (see ``clock``).
CLOCK_SITE = Path(__file__).resolve().parent / "livestack_clock"
#: The folder of ``livestack_hostname`` (a Celery worker's ``[core] hostname_callable``).
HOSTNAME_SITE = Path(__file__).resolve().parent / "livestack_host"

#: Components in start order after the api-server, and their health key in /monitor/health.
COMPONENTS: dict[str, str] = {"scheduler": "scheduler", "dag-processor": "dag_processor", "triggerer": "triggerer"}
#: The warehouse Connection id the bundled orchestration config names (defaults.warehouse_conn_id).
WAREHOUSE_CONN_ID = "warehouse"
#: Marks of an environment Airflow cannot run in.
EXECUTION_API_DEFECT = "needs a discriminator field"
BIND_ERRORS = ("address already in use", "cannot assign requested address")
LOCALEXECUTOR_DAG_RUN_STATES = ("queued", "running")


#: The clock of the test stack (``clock``): the bundled corpus' reference date (the DAG.test()
#: suite runs with logical date 2026-04-15), 10:00 UTC, hours from every bundled cron tick (daily
#: 02:00 UTC and 03:30 Europe/Berlin, monthly on the 1st and the 3rd), so no cron DAG starts by
#: itself while the tests run.
TEST_CLOCK = datetime.datetime(2026, 4, 15, 10, 0, tzinfo=datetime.UTC)


class StackUnavailable(Exception):
    """The environment cannot run the stack (no PostgreSQL binaries, no Airflow, no loopback
    port, the unrepaired Airflow 3.2.x execution-API defect). Tests skip on it, loudly."""


# --------------------------------------------------------------------------- small helpers


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: Path, lines: int = 60) -> str:
    """The last ``lines`` lines of a log file, or ``(no log)``."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def http_json(
    method: str, url: str, body: Any = None, token: str | None = None, timeout: float = 60
) -> tuple[int, Any]:
    """One HTTP request with a JSON body; returns ``(status, parsed JSON or text)``.

    :raises OSError: When the server cannot be reached (refused, timed out).
    """
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("accept", "application/json")
    if data is not None:
        request.add_header("content-type", "application/json")
    if token is not None:
        request.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode()
            return response.status, _parse(text)
    except urllib.error.HTTPError as error:
        return error.code, _parse(error.read().decode(errors="replace"))


def _parse(text: str) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def stop_process_group(proc: subprocess.Popen[bytes], grace: float = 20) -> None:
    """Stop a process started with ``start_new_session=True`` and everything in its group.

    SIGTERM to the group, up to ``grace`` seconds for the leader to exit, then SIGKILL to the
    group: it may still hold children (parsing processes, executor workers) after its leader.
    A no-op on a group that is gone.
    """
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait(timeout=10)


def wait_until(
    predicate: Callable[[], Any], what: str, timeout: float, interval: float = 0.5, diagnose: Callable[[], str] = str
) -> Any:
    """Poll ``predicate`` until it returns a truthy value (returned), at most ``timeout`` seconds.

    :raises AssertionError: When the time is up, with ``what`` and ``diagnose()``.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:.0f} s\n{diagnose()}")
        time.sleep(interval)


# --------------------------------------------------------------------------- PostgreSQL


def postgres_bin_dir() -> str | None:
    """The newest ``/usr/lib/postgresql/<major>/bin`` holding initdb and pg_ctl, else PATH's."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0,
    )
    for d in reversed(candidates):
        if os.path.exists(os.path.join(d, "initdb")) and os.path.exists(os.path.join(d, "pg_ctl")):
            return d
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb and shutil.which("pg_ctl") else None


@dataclass
class PostgresServer:
    """A throw-away PostgreSQL server on 127.0.0.1 (trust authentication, fsync off).

    ``start()`` runs ``initdb`` into ``<base>/data`` and ``pg_ctl start -w`` on a free port
    (as the ``postgres`` system user via ``runuser`` when run as root: PostgreSQL refuses root);
    ``stop()`` is ``pg_ctl stop -m immediate``. Without server binaries (``scripts/ensure-postgres.sh``
    installs Debian's package) ``start()`` raises :class:`StackUnavailable`. ``env`` is added to
    the environment of the server's processes (the stack's clock).

    :ivar port: The port, once started.
    """

    base: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    bin_dir: str = ""
    prefix: list[str] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        return self.base / "postgres.log"

    def uri(self, database: str = "postgres", scheme: str = "postgres") -> str:
        """``<scheme>://postgres@127.0.0.1:<port>/<database>`` (no password: trust on loopback)."""
        return f"{scheme}://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> PostgresServer:
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            raise StackUnavailable(
                "PostgreSQL server binaries not found (run scripts/ensure-postgres.sh: Debian package postgresql)"
            )
        self.bin_dir = bin_dir
        as_root = os.geteuid() == 0
        if as_root:
            try:
                pwd.getpwnam("postgres")
            except KeyError as exc:
                raise StackUnavailable("running as root and no 'postgres' user to run the server as") from exc
            # runuser lives in /usr/sbin, which a minimal PATH (CI, env -i) may lack.
            runuser = shutil.which("runuser") or next(
                (p for p in ("/usr/sbin/runuser", "/sbin/runuser") if os.path.exists(p)), None
            )
            if runuser is None:
                raise StackUnavailable("running as root and no runuser to start the server as the 'postgres' user")
            self.prefix = [runuser, "-u", "postgres", "--"]
        self.base.mkdir(parents=True, exist_ok=True)
        data, sock = self.base / "data", self.base / "sock"
        sock.mkdir(exist_ok=True)
        if as_root:
            os.chmod(self.base, 0o755)
            for p in (self.base, sock):
                shutil.chown(p, "postgres")
        try:
            self._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        except subprocess.CalledProcessError as exc:
            hint = ""
            if as_root and "Permission denied" in (exc.stderr or ""):
                hint = f" (the server runs as the 'postgres' user: every folder above {self.base} must let it through, mode o+x)"
            raise AssertionError(f"initdb failed: {exc.stderr or exc.stdout}{hint}") from exc
        for attempt in (1, 2):
            self.port = free_loopback_port()
            try:
                self._run(
                    "pg_ctl", "-D", str(data), "-l", str(self.log_path), "-w", "-t", "60", "start", "-o",
                    f"-p {self.port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                )
                return self
            except subprocess.CalledProcessError as exc:
                if attempt == 2 or not any(e in tail(self.log_path).lower() for e in BIND_ERRORS):
                    raise AssertionError(
                        f"could not start PostgreSQL: {exc.stderr or exc.stdout}\n{tail(self.log_path)}"
                    ) from exc
        raise AssertionError("unreachable")

    def _run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.prefix, os.path.join(self.bin_dir, tool), *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **self.env},
        )

    def create_database(self, name: str) -> str:
        """``CREATE DATABASE`` through psql on the Unix socket-less TCP port; returns its URI."""
        self._run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-v", "ON_ERROR_STOP=1",
                  "-c", f'create database "{name}"')
        return self.uri(name)

    def psql(self, database: str, sql: str) -> str:
        """Run ``sql`` with psql (unaligned, tuples only) and return its output."""
        return self._run(
            "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database,
            "-v", "ON_ERROR_STOP=1", "-At", "-c", sql,
        ).stdout

    def stop(self) -> None:
        if self.port and self.bin_dir:
            subprocess.run(
                [*self.prefix, os.path.join(self.bin_dir, "pg_ctl"), "-D", str(self.base / "data"),
                 "-m", "immediate", "-w", "stop"],
                capture_output=True,
                check=False,
                timeout=60,
            )
            self.port = 0


# --------------------------------------------------------------------------- the stack


@dataclass
class LiveStack:
    """A running Airflow 3.2 (api-server, scheduler, dag-processor, triggerer) on loopback.

    :param work: Folder for everything the stack writes (home, logs, PostgreSQL data, bundles).
    :param dags_folder: The DAG folder (default ``generated/dags`` of this repository).
    :param metadata: ``postgres`` (default) or ``sqlite`` metadata database.
    :param warehouse: ``postgres`` (the Connection ``warehouse`` points at the stack's
        ``warehouse`` database), ``duckdb`` (no Connection: the embedded DuckDB file
        ``<work>/warehouse.duckdb``; tasks then run one at a time, since a DuckDB file takes one
        writer process: ``parallelism`` 1, because the bundled corpus names the Connection
        ``warehouse``, which the compiler takes for a server database and so gives no DuckDB pool;
        a project compiled for the DuckDB file has its pool imported, :meth:`import_pools`) or
        ``none`` (a stack that runs no task).
    :param components: Which long-running components to start besides the api-server.
    :param env: Extra environment for every component (wins over the stack's own values).
    :param git_bundle: When set, a folder to make a local git repository of and serve as a
        ``GitDagBundle`` named ``git`` (its DAGs carry the commit as bundle version). The bundle
        reads a bare repository beside it (``<git_bundle>.git``) that :meth:`commit_project`
        pushes to, as a deployment's bundle reads a Git server.
    :param executor: ``local`` (``LocalExecutor``, default) or ``celery``: ``CeleryExecutor``
        with a ``redis-server`` of the stack's as the broker, the metadata database as Celery's
        result backend, and ``workers`` ``airflow celery worker`` processes that share nothing on
        disk with the rest of the stack or each other: each has its own ``AIRFLOW_HOME``, log
        folder, DAG-bundle checkout (``dag_bundle_storage_path``), OpenLineage file
        (:attr:`lineage_files`) and host name (``[core] hostname_callable``: ``ca-worker-<n>``,
        what ``TaskInstance.hostname`` records). They serve no logs (``--skip-serve-logs``: two
        log servers cannot share a port on one host), so a task's log is read in the worker's
        home (:meth:`worker_log`), not through the api-server. What they share is what a
        deployment shares: the metadata database, the broker, the warehouse and the bundle's
        repository; the installed software (Airflow, the runtime, the example's python jobs and
        dbt) comes from this machine's environments as from a worker image.
    :param dags_folder_bundle: Serve :attr:`dags_folder` as the ``dags-folder`` bundle (default);
        a stack whose DAGs come from the ``git`` bundle only sets it False.
    :param inherit_lineage_config: When true (the demo), an OpenLineage configuration in this
        process's environment (``OPENLINEAGE__TRANSPORT__*``, ``OPENLINEAGE_CONFIG``,
        ``OPENLINEAGE_URL``) is the stack's; when false (the tests), every ``OPENLINEAGE*``
        variable is dropped and ``OPENLINEAGE_CONFIG`` names a file of the stack's that writes
        :attr:`lineage_file` (so no ``openlineage.yml`` in a working or home folder applies
        either). Without a configuration, the stack writes :attr:`lineage_file` either way.
    :param clock: When set (an aware datetime), every process of the stack, PostgreSQL included,
        runs with its wall clock shifted so that it reads ``clock`` at start and then advances in
        real time (one fixed offset: libfaketime for PostgreSQL, time-machine for the Python
        processes; monotonic clocks untouched).
        Airflow decides at unpause whether a cron DAG runs its latest missed tick at once
        (``CronTriggerTimetable._calc_first_run``: within a tenth of the cron period, at least
        5 minutes), so on a real clock the bundled monthly DAGs start by themselves on some days
        of each month; a fixed clock far from every tick makes the scheduler start nothing but
        what a test triggers and what Asset events trigger. :meth:`now` reads the stack's clock.
    """

    work: Path
    dags_folder: Path = REPO_ROOT / "generated" / "dags"
    metadata: str = "postgres"
    warehouse: str = "postgres"
    components: tuple[str, ...] = ("scheduler", "dag-processor", "triggerer")
    env_extra: dict[str, str] = field(default_factory=dict)
    git_bundle: Path | None = None
    executor: str = "local"
    workers: int = 2
    dags_folder_bundle: bool = True
    keep: bool = False
    clock: datetime.datetime | None = None
    inherit_lineage_config: bool = True
    url: str = ""
    passwords: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    postgres: PostgresServer | None = None
    failed: bool = False
    _env: dict[str, str] = field(default_factory=dict)
    _tokens: dict[str, tuple[float, str]] = field(default_factory=dict)
    _stopped: bool = False
    _clock_offset: float = 0.0
    _redis_port: int = 0

    def now(self) -> datetime.datetime:
        """The stack's wall clock (see ``clock``), timezone-aware UTC."""
        return datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=self._clock_offset)

    # ------------------------------------------------------------------ paths

    @property
    def home(self) -> Path:
        return self.work / "airflow-home"

    @property
    def logs(self) -> Path:
        return self.work / "logs"

    @property
    def projects(self) -> Path:
        """The folder of the ``projects`` LocalDagBundle (see :meth:`add_project`)."""
        return self.work / "projects"

    @property
    def lineage_file(self) -> Path:
        """Where the OpenLineage file transport writes, unless the caller configured another."""
        return self.work / "lineage" / "events.jsonl"

    @property
    def duckdb_path(self) -> Path:
        return self.work / "warehouse.duckdb"

    def env(self) -> dict[str, str]:
        """The environment every component runs with (a copy)."""
        return dict(self._env)

    # ------------------------------------------------------------------ start / stop

    def start(self, timeout: float = 180) -> LiveStack:
        """Start everything and wait until healthy. On any failure the stack is stopped.

        :raises StackUnavailable: The environment cannot run it (see the class).
        :raises AssertionError: A component failed or did not become healthy within ``timeout``.
        """
        try:
            self._start(timeout)
        except BaseException:
            self.failed = True
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        import importlib.util

        if importlib.util.find_spec("airflow") is None:
            raise StackUnavailable(f"apache-airflow is not installed for {sys.executable} (run scripts/python-env.sh)")
        for d in (self.home, self.logs, self.projects, self.lineage_file.parent):
            d.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            # PostgreSQL runs as the postgres user: it must reach its folder under the work folder
            # (mkdtemp makes it 0700).
            os.chmod(self.work, 0o755)
        if self.git_bundle is not None:
            self._init_git_bundle()
        pg_clock, python_clock = self._clock_env()
        if self.metadata == "postgres" or self.warehouse == "postgres":
            self.postgres = PostgresServer(self.work / "postgres", env=pg_clock).start()
        sql_conn = f"sqlite:///{self.home / 'airflow.db'}"
        if self.metadata == "postgres":
            assert self.postgres is not None
            self.postgres.create_database("airflow")
            sql_conn = self.postgres.uri("airflow", "postgresql+psycopg2")
        if self.warehouse == "postgres":
            assert self.postgres is not None
            self.postgres.create_database("warehouse")
        if self.executor == "celery":
            self._start_redis()
        self._env = self._build_env(sql_conn)
        if python_clock:
            self._env["CONTRACT_ASSETS_CLOCK_OFFSET"] = python_clock
            self._env["PYTHONPATH"] = os.pathsep.join([str(CLOCK_SITE), self._env["PYTHONPATH"]])
        self.run_cli("db", "migrate", timeout=timeout)
        # The pools of the DAG folder's project (generated/pools.json beside generated/dags).
        self.import_pools(self.dags_folder.parent)
        self._start_api_server(timeout)
        for name in self.components:
            self.start_process(name, *self._command(name))
        wanted = {COMPONENTS[name] for name in self.components}
        self.wait(lambda: self._healthy(wanted), f"components {sorted(wanted)} healthy", timeout)
        if self.executor == "celery":
            self._start_workers(timeout)

    def _clock_env(self) -> tuple[dict[str, str], str]:
        """The stack's clock: ``(environment of the PostgreSQL server, offset for the Python
        processes)``; nothing without ``clock``.

        PostgreSQL (its ``now()`` decides which DAGs need runs) runs under libfaketime with a
        fixed offset. Python processes cannot: libfaketime turns Python's ``time.sleep``
        (``clock_nanosleep`` on an absolute monotonic deadline) into ``EINVAL``; they shift their
        clock with time-machine instead (``scripts/livestack_clock/sitecustomize.py``).
        """
        if self.clock is None:
            return {}, ""
        offset = int((self.clock - datetime.datetime.now(datetime.UTC)).total_seconds())
        self._clock_offset = float(offset)
        return self.faketime_env(), str(offset)

    def faketime_env(self) -> dict[str, str]:
        """Environment that puts a non-Python process (PostgreSQL, the Node CLI) on the stack's
        clock through libfaketime: ``LD_PRELOAD``, ``FAKETIME`` (the offset in seconds) and
        ``FAKETIME_DONT_FAKE_MONOTONIC``; empty without ``clock``.

        :raises StackUnavailable: libfaketime is not installed.
        """
        if self.clock is None:
            return {}
        library = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))), None)
        if library is None:
            raise StackUnavailable(
                "libfaketime not found (run scripts/ensure-postgres.sh: Debian package faketime), "
                "needed for the live stack's fixed clock"
            )
        offset = int(self._clock_offset)
        return {"LD_PRELOAD": library, "FAKETIME": f"{offset:+d}", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}

    def _build_env(self, sql_conn: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
        if not self.inherit_lineage_config:
            env = {k: v for k, v in env.items() if not k.startswith("OPENLINEAGE")}
        for key in ("AIRFLOW_CONFIG", "AIRFLOW_HOME", "CONTRACT_ASSETS_WAREHOUSE"):
            env.pop(key, None)
        self.passwords = {"admin": secrets.token_urlsafe(16), "viewer": secrets.token_urlsafe(16)}
        password_file = self.home / "passwords.json"
        password_file.write_text(json.dumps(self.passwords) + "\n", encoding="utf-8")
        bundles = [
            {"name": "projects", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
             "kwargs": {"path": str(self.projects)}},
        ]
        if self.dags_folder_bundle:
            bundles.insert(0, {"name": "dags-folder", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
                               "kwargs": {"path": str(self.dags_folder)}})
        if self.git_bundle is not None:
            bundles.append(
                {"name": "git", "classpath": "airflow.providers.git.bundles.git.GitDagBundle",
                 "kwargs": {"repo_url": str(self.bare_repository), "tracking_ref": "main", "subdir": "generated/dags"}}
            )
        venv_bin = str(Path(sys.executable).parent)
        env.update(
            {
                "AIRFLOW_HOME": str(self.home),
                "AIRFLOW_CONFIG": str(AIRFLOW_CFG),
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": sql_conn,
                "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
                "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(bundles),
                "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_STORAGE_PATH": str(self.work / "bundles"),
                "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "logs"),
                "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,viewer:viewer",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(password_file),
                "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
                "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
                "PYTHONPATH": os.pathsep.join(p for p in (str(JOBS), os.environ.get("PYTHONPATH", "")) if p),
                "PATH": os.pathsep.join([venv_bin, str(SHIMS), os.environ.get("PATH", "")]),
                # a contract on its sample data lands "object storage" here, not in the project
                "CONTRACT_ASSETS_OBJECT_STORE_DIR": str(self.work),
                # the dbt contracts run dbt from the repository's dbt environment (ADR 0012)
                "CONTRACT_ASSETS_DBT_BIN": str(REPO_ROOT / ".venv-dbt" / "bin"),
                "PYTHONDONTWRITEBYTECODE": "1",
            }
        )
        if self.warehouse == "postgres":
            assert self.postgres is not None
            env[f"AIRFLOW_CONN_{WAREHOUSE_CONN_ID.upper()}"] = self.postgres.uri("warehouse")
        elif self.warehouse == "duckdb":
            env["CONTRACT_ASSETS_WAREHOUSE"] = str(self.duckdb_path)
            env[f"AIRFLOW_CONN_{WAREHOUSE_CONN_ID.upper()}"] = f"duckdb://{self.duckdb_path}"
            env["AIRFLOW__CORE__PARALLELISM"] = "1"  # one writer process per DuckDB file
        if not self.inherit_lineage_config:
            # a config file of the stack's own: the client reads OPENLINEAGE_CONFIG before
            # ./openlineage.yml and ~/.openlineage/openlineage.yml, and a file wins over env vars
            config = self.home / "openlineage.yml"
            config.write_text(
                json.dumps({"transport": {"type": "file", "log_file_path": str(self.lineage_file), "append": True}}) + "\n",
                encoding="utf-8",
            )
            env["OPENLINEAGE_CONFIG"] = str(config)
        elif not any(k.startswith("OPENLINEAGE__TRANSPORT__") or k in ("OPENLINEAGE_CONFIG", "OPENLINEAGE_URL") for k in env):
            env.update(
                OPENLINEAGE__TRANSPORT__TYPE="file",
                OPENLINEAGE__TRANSPORT__LOG_FILE_PATH=str(self.lineage_file),
                OPENLINEAGE__TRANSPORT__APPEND="true",
            )
        if self.executor == "celery":
            assert self.postgres is not None
            env.update(
                AIRFLOW__CORE__EXECUTOR="CeleryExecutor",
                AIRFLOW__CELERY__BROKER_URL=f"redis://127.0.0.1:{self._redis_port}/0",
                AIRFLOW__CELERY__RESULT_BACKEND="db+" + self.postgres.uri("airflow", "postgresql"),
                AIRFLOW__CELERY__WORKER_CONCURRENCY="2",
            )
        env.update(self.env_extra)
        return env

    # ------------------------------------------------------------------ CeleryExecutor

    @property
    def lineage_files(self) -> list[Path]:
        """Every OpenLineage file of the stack: :attr:`lineage_file` (scheduler, api-server,
        dag-processor; every task on the LocalExecutor) and each Celery worker's own."""
        return [self.lineage_file, *(self.worker_home(n) / "lineage.jsonl" for n in range(1, self.workers + 1) if self.executor == "celery")]

    def worker_home(self, n: int) -> Path:
        """The ``AIRFLOW_HOME`` of Celery worker ``n`` (1-based)."""
        return self.work / f"worker-{n}" / "airflow-home"

    def worker_log(self, n: int, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> str:
        """A task try's log as Celery worker ``n`` wrote it in its own home ("" when it did not run it)."""
        folder = self.worker_home(n) / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        found = sorted(folder.glob(f"**/attempt={try_number}.log"))
        return "\n".join(f.read_text(errors="replace") for f in found)

    def _start_redis(self, port: int = 0) -> None:
        server = shutil.which("redis-server")
        if server is None:
            raise StackUnavailable("redis-server not found (run scripts/ensure-postgres.sh: Debian package redis-server), needed as the Celery broker")
        folder = self.work / "redis"
        folder.mkdir(parents=True, exist_ok=True)
        self._redis_port = port or free_loopback_port()
        log_path = self.logs / "redis.log"
        since = log_path.stat().st_size if log_path.exists() else 0
        with log_path.open("ab") as log:
            self.processes["redis"] = subprocess.Popen(
                [server, "--port", str(self._redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", str(folder)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        wait_until(lambda: "Ready to accept connections" in log_path.read_text(errors="replace")[since:],
                   "redis-server ready", 30)

    def _start_workers(self, timeout: float) -> None:
        """``airflow celery worker`` ``workers`` times, each on its own home (see the class)."""
        for n in range(1, self.workers + 1):
            self._spawn_worker(n)
        for n in range(1, self.workers + 1):
            self._wait_worker_ready(n, timeout)

    def _wait_worker_ready(self, n: int, timeout: float, since: int = 0) -> None:
        """Until worker ``n``'s log, after its first ``since`` bytes, says it is ready."""
        path = self.logs / f"worker-{n}.log"

        def ready() -> bool:
            with path.open("rb") as f:
                f.seek(since)
                return b" ready." in f.read()

        self.wait(ready, f"celery worker {n} ready", timeout)

    def kill_worker(self, n: int) -> None:
        """SIGKILL Celery worker ``n`` and every process of its group (its pool and the task
        processes it supervises), as a machine that dies would: nothing is shut down cleanly."""
        proc = self.processes.pop(f"worker-{n}")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def start_worker(self, n: int, timeout: float = 180) -> None:
        """Start Celery worker ``n`` again (after :meth:`kill_worker`), on the same home."""
        path = self.logs / f"worker-{n}.log"
        since = path.stat().st_size if path.exists() else 0
        self._spawn_worker(n)
        self._wait_worker_ready(n, timeout, since)

    def restart_redis(self, down: float = 0.0) -> None:
        """Stop the broker (SIGKILL: its queues are in memory only, so what it held is lost),
        keep it down ``down`` seconds, and start it again on the same port."""
        proc = self.processes.pop("redis")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        time.sleep(down)
        self._start_redis(self._redis_port)

    def _spawn_worker(self, n: int) -> None:
        """Start ``airflow celery worker`` number ``n`` on its own home (see the class)."""
        home = self.worker_home(n)
        (home / "logs").mkdir(parents=True, exist_ok=True)
        config = home / "openlineage.yml"
        config.write_text(
            json.dumps({"transport": {"type": "file", "log_file_path": str(home / "lineage.jsonl"), "append": True}}) + "\n",
            encoding="utf-8",
        )
        env = {
            **self._env,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_STORAGE_PATH": str(home / "bundles"),
            "AIRFLOW__CORE__HOSTNAME_CALLABLE": "livestack_hostname.hostname",
            "CONTRACT_ASSETS_WORKER_NAME": f"ca-worker-{n}",
            "PYTHONPATH": os.pathsep.join([str(HOSTNAME_SITE), self._env["PYTHONPATH"]]),
            "OPENLINEAGE_CONFIG": str(config),
        }
        name = f"worker-{n}"
        with (self.logs / f"{name}.log").open("ab") as log:
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", "airflow", "celery", "worker", "--celery-hostname", f"ca-worker-{n}@%h",
                 "--concurrency", "2", "--skip-serve-logs", "--without-mingle", "--without-gossip"],
                env=env, cwd=home, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )

    def _command(self, name: str) -> list[str]:
        if name == "scheduler":
            return ["scheduler", "--skip-serve-logs"]
        if name == "triggerer":
            return ["triggerer", "--skip-serve-logs"]
        return [name]

    def _start_api_server(self, timeout: float) -> None:
        for attempt in (1, 2):
            port = free_loopback_port()
            self.url = f"http://127.0.0.1:{port}"
            self._env["AIRFLOW__API__BASE_URL"] = self.url
            self._env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] = f"{self.url}/execution/"
            self.start_process("api-server", "api-server", "-H", "127.0.0.1", "-p", str(port), "-w", "1")
            proc = self.processes["api-server"]
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and proc.poll() is None:
                with contextlib.suppress(OSError):
                    status, body = http_json("GET", f"{self.url}/api/v2/monitor/health", timeout=5)
                    if status == 200 and isinstance(body, dict) and body["metadatabase"]["status"] == "healthy":
                        return
                time.sleep(0.3)
            log = self.log("api-server")
            if any(e in log.lower() for e in BIND_ERRORS):
                if attempt == 1:  # the free port was taken meanwhile: once more on another one
                    stop_process_group(self.processes.pop("api-server"))
                    continue
                raise StackUnavailable(f"cannot bind a loopback port for the api-server:\n{log}")
            self.check_running()
            raise AssertionError(f"airflow api-server did not become healthy within {timeout:.0f} s:\n{log}")

    def run_cli(self, *args: str, timeout: float = 180) -> str:
        """Run ``airflow ARGS`` to completion with the stack's environment; returns its output."""
        log = self.logs / f"airflow-{'-'.join(args[:2])}.log"
        with log.open("a") as out:
            proc = subprocess.run(
                [sys.executable, "-m", "airflow", *args],
                env=self._env, cwd=self.work, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False,
            )
        if proc.returncode != 0:
            raise AssertionError(f"airflow {' '.join(args)} failed (exit {proc.returncode}):\n{tail(log)}")
        return log.read_text(errors="replace")

    def start_process(self, name: str, *args: str) -> None:
        """Start ``airflow ARGS`` as component ``name`` in its own process group."""
        with (self.logs / f"{name}.log").open("ab") as log:
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", "airflow", *args],
                env=self._env, cwd=self.work, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() ends it with its children
            )

    def log(self, name: str, lines: int = 60) -> str:
        return tail(self.logs / f"{name}.log", lines)

    def diagnose(self, runs: list[dict[str, Any]] | None = None) -> str:
        """The tails of every component's log (for failure messages), after those of the failed
        task tries of ``runs`` (DAG runs as the API lists them), which come first: a CI log keeps
        the head of a long message."""
        parts = [self.failed_task_logs(runs)] if runs else []
        parts += [f"--- {name} log\n{self.log(name, 40)}" for name in self.processes]
        return "\n".join(p for p in parts if p)

    def failed_task_logs(self, runs: list[dict[str, Any]], lines: int = 40) -> str:
        """The last ``lines`` lines of each failed (or retrying) task try of the failed ``runs``,
        read through the API on the LocalExecutor and from the worker's own home on Celery.
        Never raises: it only feeds a failure message."""
        out: list[str] = []
        for run in runs:
            if run.get("state") != "failed":
                continue
            dag_id, run_id = str(run["dag_id"]), str(run["dag_run_id"])
            try:
                tries = [t for t in self.task_instances(dag_id, run_id) if t.get("state") in ("failed", "up_for_retry", "upstream_failed")]
            except Exception as exc:  # noqa: BLE001 - a failure message must not fail
                out.append(f"--- {dag_id} {run_id}: task instances unreadable ({exc})")
                continue
            for ti in tries:
                task_id, state, number = str(ti["task_id"]), ti.get("state"), int(ti.get("try_number") or 1)
                if state == "upstream_failed":
                    out.append(f"--- {dag_id} {run_id} {task_id}: upstream_failed")
                    continue
                try:
                    if self.executor == "celery":
                        text = "\n".join(self.worker_log(n, dag_id, run_id, task_id, number) for n in range(1, self.workers + 1))
                    else:
                        text = self.task_log(dag_id, run_id, task_id, number)
                except Exception as exc:  # noqa: BLE001 - a failure message must not fail
                    text = f"(log unreadable: {exc})"
                tail = "\n".join(text.strip().splitlines()[-lines:])
                out.append(f"--- {dag_id} {run_id} {task_id} try {number} ({state}) log\n{tail}")
        return "\n".join(out)

    def check_running(self) -> None:
        """Raise when a component has exited (StackUnavailable for the known environment defect)."""
        for name, proc in self.processes.items():
            if proc.poll() is None:
                continue
            log = self.log(name)
            if EXECUTION_API_DEFECT in log:
                raise StackUnavailable(
                    f"airflow {name} dies building the execution API (the apache-airflow-core 3.2.x "
                    f"discriminator defect; run scripts/python-env.sh, which repairs it):\n{log[-2000:]}"
                )
            self.failed = True
            raise AssertionError(f"airflow {name} exited with {proc.returncode}:\n{log}")

    def wait(self, predicate: Callable[[], Any], what: str, timeout: float, interval: float = 0.5) -> Any:
        """:func:`wait_until` that also fails as soon as a component dies."""

        def check() -> Any:
            self.check_running()
            try:
                return predicate()
            except OSError as exc:  # a slow or restarting api-server: try again until the deadline
                print(f"livestack: {what}: {type(exc).__name__}: {exc}; retrying", file=sys.stderr)
                return None

        try:
            return wait_until(check, what, timeout, interval, self.diagnose)
        except AssertionError:
            self.failed = True
            raise

    def _healthy(self, wanted: set[str]) -> bool:
        try:
            status, body = http_json("GET", f"{self.url}/api/v2/monitor/health", timeout=5)
        except OSError:
            return False
        if status != 200 or not isinstance(body, dict):
            return False
        return body["metadatabase"]["status"] == "healthy" and all(
            (body.get(key) or {}).get("status") == "healthy" for key in wanted
        )

    def stop(self) -> None:
        """Stop every component (SIGTERM to each group, then SIGKILL) and PostgreSQL.

        Safe to call twice. The work folder is removed unless the stack failed or ``keep``.
        """
        if self._stopped:
            return
        self._stopped = True
        for proc in self.processes.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in self.processes.values():
            stop_process_group(proc, grace=max(0.1, deadline - time.monotonic()))
        self.processes.clear()
        if self.postgres is not None:
            self.postgres.stop()
        if self.failed or self.keep:
            print(f"livestack: logs kept in {self.logs}", file=sys.stderr)
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    # ------------------------------------------------------------------ REST client

    def token(self, user: str = "admin") -> str:
        """A JWT from ``POST /auth/token`` for ``user`` (cached for 10 minutes)."""
        cached = self._tokens.get(user)
        if cached and time.monotonic() - cached[0] < 600:
            return cached[1]
        status, body = http_json("POST", f"{self.url}/auth/token", {"username": user, "password": self.passwords[user]})
        if status != 201 or not isinstance(body, dict) or not body.get("access_token"):
            raise AssertionError(f"login of {user}: {status} {body}")
        self._tokens[user] = (time.monotonic(), str(body["access_token"]))
        return str(body["access_token"])

    def api(self, method: str, path: str, body: Any = None, user: str = "admin") -> tuple[int, Any]:
        """``METHOD /api/v2<path>`` as ``user``; returns ``(status, JSON)``."""
        return http_json(method, f"{self.url}/api/v2{path}", body, token=self.token(user))

    def get(self, path: str, key: str | None = None, **params: Any) -> Any:
        """A GET that must answer 200. With ``key``, a paged collection: every item of ``key``
        across pages (``limit``/``offset``), as one list."""
        if key is None:
            status, body = self.api("GET", _with_query(path, params))
            if status != 200:
                raise AssertionError(f"GET {path}: {status} {body}")
            return body
        items: list[Any] = []
        offset = 0
        while True:
            page = self.get(path, **{**params, "limit": 100, "offset": offset})
            items.extend(page[key])
            offset += len(page[key])
            if not page[key] or offset >= int(page.get("total_entries", 0)):
                return items

    def dags(self) -> list[dict[str, Any]]:
        return list(self.get("/dags", key="dags"))

    def wait_for_dags(self, dag_ids: Iterable[str], timeout: float = 180) -> dict[str, dict[str, Any]]:
        """Wait until the dag-processor has registered every DAG id (and none has an import
        error); returns ``{dag_id: dag}`` of those."""
        wanted = set(dag_ids)

        def registered() -> dict[str, dict[str, Any]] | None:
            errors = self.get("/importErrors", key="import_errors")
            if errors:
                raise AssertionError(f"DAG import errors: {json.dumps(errors, indent=1)[:4000]}")
            found = {d["dag_id"]: d for d in self.dags() if d["dag_id"] in wanted}
            return found if set(found) == wanted else None

        return dict(self.wait(registered, f"DAGs {sorted(wanted)} registered", timeout, interval=1))

    def unpause(self, dag_id: str, paused: bool = False) -> None:
        """``PATCH /dags/{dag_id}`` ``is_paused`` (``paused=True`` pauses it again)."""
        status, body = self.api("PATCH", f"/dags/{_q(dag_id)}", {"is_paused": paused})
        if status != 200:
            raise AssertionError(f"{'pause' if paused else 'unpause'} {dag_id}: {status} {body}")

    def trigger(
        self,
        dag_id: str,
        logical_date: str | None = None,
        conf: Mapping[str, Any] | None = None,
        partition_key: str | None = None,
    ) -> dict[str, Any]:
        """``POST /dags/{dag_id}/dagRuns``: a ``manual`` run (of ``partition_key``, for a partitioned
        DAG); returns the run."""
        body_in: dict[str, Any] = {"logical_date": logical_date, "conf": dict(conf or {})}
        if partition_key is not None:
            body_in["partition_key"] = partition_key
        status, body = self.api("POST", f"/dags/{_q(dag_id)}/dagRuns", body_in)
        if status != 200:
            raise AssertionError(f"trigger {dag_id}: {status} {body}")
        return dict(body)

    def dag_runs(self, dag_id: str = "~", **params: Any) -> list[dict[str, Any]]:
        return list(self.get(f"/dags/{_q(dag_id)}/dagRuns", key="dag_runs", order_by="id", **params))

    def triggering_events(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        """The Asset events that triggered a run (``GET .../upstreamAssetEvents``)."""
        body = self.get(f"/dags/{_q(dag_id)}/dagRuns/{_q(run_id)}/upstreamAssetEvents")
        return list(body["asset_events"])

    def asset_events(self, **params: Any) -> list[dict[str, Any]]:
        """Every Asset event (``GET /assets/events``, all pages), by id."""
        items: list[dict[str, Any]] = []
        while True:
            page = self.asset_events_page(**{**params, "limit": 100, "offset": len(items)})
            items.extend(page["asset_events"])
            if not page["asset_events"] or len(items) >= int(page.get("total_entries", 0)):
                return sorted(items, key=lambda e: int(e["id"]))

    def asset_events_page(self, timeout: float = 60, **params: Any) -> dict[str, Any]:
        """One page of ``GET /assets/events``, asked again while Airflow 3.2.2 answers it with a
        500: its response model requires the ``start_date`` of each DAG run an event created, which
        a run the scheduler has queued but not started yet lacks (pydantic: ``created_dagruns.0.
        start_date``, ``NoneType``, in the api-server's log); the run starts within seconds."""
        deadline = time.monotonic() + timeout
        while True:
            status, body = self.api("GET", _with_query("/assets/events", params))
            if status == 200:
                return dict(body)
            if status != 500 or time.monotonic() > deadline:
                raise AssertionError(f"GET /assets/events: {status} {body}")
            time.sleep(1)

    def queued_events(self, dag_id: str) -> list[dict[str, Any]]:
        """Asset events queued for a DAG's next asset-triggered run (``GET /dags/{id}/assets/queuedEvents``)."""
        status, body = self.api("GET", f"/dags/{_q(dag_id)}/assets/queuedEvents")
        if status == 404:
            return []
        if status != 200:
            raise AssertionError(f"queued events of {dag_id}: {status} {body}")
        return list(body["queued_events"])

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        return list(self.get(f"/dags/{_q(dag_id)}/dagRuns/{_q(run_id)}/taskInstances", key="task_instances"))

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> str:
        """The task try's log as text (the api-server reads the local log files): each record's
        ``event``, and under a record with an exception each ``<type>: <message>`` of its
        ``error_detail`` (as the UI shows it)."""
        path = f"/dags/{_q(dag_id)}/dagRuns/{_q(run_id)}/taskInstances/{_q(task_id)}/logs/{try_number}"
        body = self.get(path, full_content="true")
        content = body.get("content") if isinstance(body, dict) else body
        if isinstance(content, list):
            lines: list[str] = []
            for c in content:
                if not isinstance(c, dict):
                    lines.append(str(c))
                    continue
                lines.append(str(c.get("event", "")))
                for detail in c.get("error_detail") or []:
                    if isinstance(detail, dict):
                        lines.append(f"  {detail.get('exc_type', '')}: {detail.get('exc_value', '')}")
            return "\n".join(lines)
        return str(content)

    def wait_until_quiescent(self, timeout: float = 300, settle: float = 6) -> list[dict[str, Any]]:
        """Wait until no DAG run is queued or running and nothing new (DAG run, Asset event) has
        appeared for ``settle`` seconds; returns every DAG run.

        ``settle`` covers the gap between a publish and the asset-triggered run the scheduler
        creates for it in its next loop (``[scheduler] scheduler_idle_sleep_time`` = 1 s).
        """
        marker: dict[str, Any] = {"seen": None, "since": time.monotonic()}

        def quiet() -> tuple[list[dict[str, Any]]] | None:
            runs = self.dag_runs()
            events = self.asset_events_page(limit=1)
            seen = (len(runs), events["total_entries"], tuple(r["state"] for r in runs))
            if seen != marker["seen"]:
                marker.update(seen=seen, since=time.monotonic())
                return None
            if any(r["state"] in LOCALEXECUTOR_DAG_RUN_STATES for r in runs):
                return None
            # a 1-tuple, so that a stack with no run at all (an empty list) is quiescent too
            return (runs,) if time.monotonic() - marker["since"] >= settle else None

        (runs,) = self.wait(quiet, "scheduler quiescent", timeout, interval=1)
        return list(runs)

    # ------------------------------------------------------------------ extra DAGs

    def _git(self, *args: str) -> str:
        assert self.git_bundle is not None
        git = shutil.which("git")
        if git is None:
            raise StackUnavailable("git is not on PATH (needed for the stack's GitDagBundle)")
        identity = ["-c", "user.name=contract-assets live stack", "-c", "user.email=live-stack@localhost"]
        proc = subprocess.run(
            [git, *identity, *args], cwd=self.git_bundle, capture_output=True, text=True, timeout=60, check=False
        )
        if proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr or proc.stdout}")
        return proc.stdout.strip()

    def _init_git_bundle(self) -> None:
        """A local repository with branch ``main`` and one commit holding an empty
        ``generated/dags`` (the ``git`` bundle's subdir), unless it exists."""
        assert self.git_bundle is not None
        if (self.git_bundle / ".git").exists():
            return
        (self.git_bundle / "generated" / "dags").mkdir(parents=True, exist_ok=True)
        (self.git_bundle / "generated" / "dags" / ".keep").write_text("", encoding="utf-8")
        self._git("init", "-q", "-b", "main")
        self._git("add", "-A")
        self._git("commit", "-q", "-m", "empty DAG bundle")
        self._git("clone", "-q", "--bare", str(self.git_bundle), str(self.bare_repository))
        self._git("remote", "add", "bundle", str(self.bare_repository))

    @property
    def bare_repository(self) -> Path:
        """The bare repository the ``git`` bundle reads (:meth:`commit_project` pushes to it)."""
        assert self.git_bundle is not None
        return self.git_bundle.with_name(self.git_bundle.name + ".git")

    def commit_project(self, project: Path, message: str) -> str:
        """Copy a compiled project's ``generated/``, ``sql/``, ``orchestration/sample_data`` and
        ``dbt/`` into the ``git`` bundle's repository (``git_bundle``), commit it on ``main``, push
        it to the bare repository the bundle reads, and return
        the commit id: the bundle version of the runs the scheduler starts from it (wait for the
        dag-processor with :meth:`wait_for_dags`)."""
        assert self.git_bundle is not None, "the stack has no git bundle (git_bundle=None)"
        for part in ("generated", "sql", "orchestration/sample_data", "dbt"):
            if (project / part).is_dir():
                shutil.copytree(project / part, self.git_bundle / part, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("target", "logs", "__pycache__"))
        self._git("add", "-A")
        self._git("commit", "-q", "-m", message)
        self._git("push", "-q", "bundle", "main")
        self.import_pools(project / "generated")
        return self._git("rev-parse", "HEAD")

    def import_pools(self, generated: Path) -> bool:
        """Create the pools a compiled project's DAGs use: ``airflow pools import
        <generated>/pools.json`` when the compiler wrote one (contracts on a DuckDB file run in the
        one-slot pool ``contract_assets_duckdb``, ADR 0030). The scheduler never queues a task
        whose pool does not exist, so this runs before its DAGs can start. An existing pool of the
        same name gets the file's slots.

        :returns: Whether there was a file to import.
        """
        pools = generated / "pools.json"
        if not pools.is_file():
            return False
        self.run_cli("pools", "import", str(pools))
        return True

    def add_project(self, name: str, project: Path) -> Path:
        """Copy a compiled project's ``generated/`` and ``orchestration/sample_data`` into the
        ``projects`` bundle as ``projects/<name>/``; returns that folder. The dag-processor
        picks the DAGs up at its next bundle refresh (wait with :meth:`wait_for_dags`)."""
        dest = self.projects / name
        shutil.copytree(project / "generated", dest / "generated")
        for part in ("orchestration/sample_data", "sql", "dbt"):
            if (project / part).is_dir():
                shutil.copytree(project / part, dest / part)
        self.import_pools(dest / "generated")
        return dest


def _q(segment: str) -> str:
    return urllib.parse.quote(segment, safe="~")


def _with_query(path: str, params: Mapping[str, Any]) -> str:
    if not params:
        return path
    return f"{path}?{urllib.parse.urlencode(params, doseq=True)}"


@contextlib.contextmanager
def live_stack(work: Path | None = None, **options: Any) -> Iterator[LiveStack]:
    """``with live_stack(...) as stack:`` a started :class:`LiveStack`, stopped on exit; the
    work folder is kept when the body raised."""
    stack = LiveStack(work=work or Path(tempfile.mkdtemp(prefix="contract-assets-live-")), **options)
    stack.start()
    try:
        yield stack
    except BaseException:
        stack.failed = True
        raise
    finally:
        stack.stop()


# --------------------------------------------------------------------------- CLI


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="livestack", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start a stack over generated/dags and run until interrupted")
    up.add_argument("--warehouse", choices=("duckdb", "postgres"), default="duckdb")
    up.add_argument("--work", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="contract-assets-live-"))
    with live_stack(work, warehouse=args.warehouse, keep=True) as stack:
        print(f"Airflow {stack.url}  (admin password {stack.passwords['admin']}); logs {stack.logs}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                stack.check_running()
                time.sleep(2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
