"""Lineage never hurts the task (DESIGN §6.4): bounded, quiet, capped, secret-free, switchable.

Broken backends are real sockets on 127.0.0.1 started by the tests: an HTTP server answering 500,
one that hangs past the emit timeout, and a closed port.
"""

from __future__ import annotations

import json
import logging
import statistics
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from contract_runtime.lineage import (
    emit_assertions,
    emit_complete,
    emit_fail,
    emit_start,
)
from contract_runtime.lineage.identity import (
    duckdb_warehouse_namespace,
    sql_warehouse_namespace,
    uri_identity,
)
from contract_runtime.redact import (
    is_query_credential,
    is_secret_key,
    mask_text,
    mask_uri_credentials,
    strip_userinfo,
)
from lineage_testkit import (
    HttpBackend,
    clear_lineage_budgets,
    closed_port,
    dag_entry,
    load_manifest,
    make_run,
    read_events,
    requires_spec,
    running_backend,
    synthetic_outputs,
    synthetic_results,
    use_file_transport,
    use_http_transport,
    validate_event,
)

MANIFEST = load_manifest()
DAG = dag_entry(MANIFEST, "finance.invoices_curated")
TIMEOUT = 1.0
MARGIN = 1.0
LOGGER = "contract_runtime.lineage"


# --- broken backends ---------------------------------------------------------------------------


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[HttpBackend]:
    with running_backend(request.param) as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh_budgets() -> Iterator[None]:
    """Each test is its own set of task tries: lineage budgets spent elsewhere do not carry over."""
    clear_lineage_budgets()
    yield
    clear_lineage_budgets()


@pytest.fixture(autouse=True)
def _no_lingering_emits() -> Iterator[None]:
    """Wait (bounded) for emit threads a test left behind, so none logs after the session."""
    yield
    deadline = time.monotonic() + 15
    for thread in threading.enumerate():
        if thread.name == "contract-assets-lineage-emit":
            thread.join(max(deadline - time.monotonic(), 0))


def _use_http(
    monkeypatch: pytest.MonkeyPatch,
    url: str,
    retries: bool = True,
    client_timeout: float | None = None,
) -> None:
    """The client at ``url`` with our bound :data:`TIMEOUT`; ``retries=False`` sets the hook's to 0."""
    use_http_transport(monkeypatch, url, timeout=TIMEOUT, retries=None if retries else 0, client_timeout=client_timeout)


def _task(run_emits: bool) -> str:
    """A stand-in task body: its outcome must not depend on lineage."""
    dataset = DAG["runtime"]["datasets"][0]
    if run_emits:
        emit_start(MANIFEST, DAG, make_run(DAG["dag_id"]))
        emit_assertions(
            MANIFEST,
            DAG,
            make_run(DAG["dag_id"], "audit"),
            dataset,
            synthetic_results(dataset),
        )
        emit_complete(
            MANIFEST, DAG, make_run(DAG["dag_id"], "publish"), synthetic_outputs(DAG)
        )
        emit_fail(
            MANIFEST,
            DAG,
            make_run(DAG["dag_id"], "publish"),
            RuntimeError("boom"),
            "publish",
        )
    return "published 42 rows"


def _lineage_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING
    ]


def _assert_bounded_and_quiet(
    caplog: pytest.LogCaptureFixture, started: float, emits: int
) -> None:
    elapsed = time.monotonic() - started
    assert elapsed < emits * (TIMEOUT + MARGIN), f"{emits} emits took {elapsed:.2f} s"
    warnings = _lineage_warnings(caplog)
    assert len(warnings) == emits, [r.getMessage() for r in warnings]
    for record in warnings:
        assert "\n" not in record.getMessage()


@pytest.mark.parametrize("backend", ["500"], indirect=True)
def test_backend_answering_500_leaves_the_task_as_with_lineage_off(
    backend: HttpBackend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """HTTP 500 without retries: each emit fails fast, logs one line, raises nothing."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    _use_http(monkeypatch, f"http://127.0.0.1:{backend.server_port}", retries=False)
    started = time.monotonic()
    assert _task(run_emits=True) == _task(run_emits=False)
    _assert_bounded_and_quiet(caplog, started, emits=4)
    assert backend.requests == 4
    assert all(
        "500" in r.getMessage() and "not sent" in r.getMessage()
        for r in _lineage_warnings(caplog)
    )


@pytest.mark.parametrize("backend", ["500"], indirect=True)
def test_backend_answering_500_with_client_retries_is_cut_at_the_timeout(
    backend: HttpBackend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The client's default retries (backoff) outlast the bound: the emit returns at the timeout."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    _use_http(monkeypatch, f"http://127.0.0.1:{backend.server_port}")
    started = time.monotonic()
    emit_start(MANIFEST, DAG, make_run(DAG["dag_id"]))
    _assert_bounded_and_quiet(caplog, started, emits=1)
    assert backend.requests >= 1


@pytest.mark.parametrize("backend", ["hang"], indirect=True)
def test_backend_that_hangs_is_cut_at_the_timeout(
    backend: HttpBackend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A backend that never answers: each emit returns after the timeout with one warning line."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    _use_http(
        monkeypatch,
        f"http://127.0.0.1:{backend.server_port}",
        retries=False,
        client_timeout=2 * TIMEOUT,
    )
    started = time.monotonic()
    assert _task(run_emits=True) == _task(run_emits=False)
    elapsed = time.monotonic() - started
    # produce, audit and publish each wait up to their budget; publish's FAIL finds it spent
    assert elapsed >= 3 * TIMEOUT * 0.9
    _assert_bounded_and_quiet(caplog, started, emits=4)
    messages = [r.getMessage() for r in _lineage_warnings(caplog)]
    assert all("not confirmed within" in m for m in messages[:3]), messages
    assert "lineage budget of 1.0 s is spent" in messages[3]


def test_closed_port_leaves_the_task_as_with_lineage_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Connection refused: bounded, one line per emit (no credentials in it), nothing raised."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    url = f"http://lineage:log-pass-3@127.0.0.1:{closed_port()}"
    _use_http(monkeypatch, url, retries=False)
    started = time.monotonic()
    assert _task(run_emits=True) == _task(run_emits=False)
    _assert_bounded_and_quiet(caplog, started, emits=4)
    for record in _lineage_warnings(caplog):
        assert "not sent: the backend is unreachable (ConnectionRefusedError" in record.getMessage(), record.getMessage()
        assert "log-pass-3" not in record.getMessage()


def test_bad_client_configuration_is_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An unknown transport type makes the client fail to build: one line, no exception."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    _use_http(monkeypatch, "http://127.0.0.1:9")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "no-such-transport")
    emit_start(MANIFEST, DAG, make_run(DAG["dag_id"]))
    assert len(_lineage_warnings(caplog)) == 1


def test_malformed_input_is_logged_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A caller bug (missing keys) costs one log line, not the task."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    use_file_transport(monkeypatch, tmp_path / "events.jsonl")
    emit_complete(MANIFEST, DAG, make_run(DAG["dag_id"]), [{"asset": "x"}])
    emit_start({}, {}, make_run("x"))
    assert len(_lineage_warnings(caplog)) == 2
    assert read_events(tmp_path / "events.jsonl") == []


def test_disabled_sends_nothing_and_raises_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """OPENLINEAGE_DISABLED=true: no event, no log line, even for input that could not be built."""
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    path = tmp_path / "events.jsonl"
    use_file_transport(monkeypatch, path)
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")
    assert _task(run_emits=True) == _task(run_emits=False)
    emit_start({}, {}, make_run("x"))
    assert not path.exists()
    assert _lineage_warnings(caplog) == []


# --- size cap ----------------------------------------------------------------------------------


@requires_spec
def test_oversized_events_shrink_explicitly_and_stay_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thousands of assertions, thousands of columns, a huge traceback: each event fits the cap,
    validates, and says in ``contractAssets_shrink`` what was cut; failed assertions are kept."""
    cap = 40_000
    path = tmp_path / "events.jsonl"
    use_file_transport(monkeypatch, path)
    monkeypatch.setenv("CONTRACT_ASSETS_LINEAGE_MAX_BYTES", str(cap))
    dataset = DAG["runtime"]["datasets"][0]
    results = [
        {
            "name": f"rule_{i:05d}",
            "metric": "invalidValues",
            "column": "status",
            "severity": "error" if i % 1000 == 999 else "warning",
            "operator": "mustBe",
            "expected": 0,
            "actual": "x" * 300,
            "success": i % 1000 != 999,
            "type": "library",
        }
        for i in range(5000)
    ]
    emit_assertions(MANIFEST, DAG, make_run(DAG["dag_id"], "audit"), dataset, results)
    (output,) = synthetic_outputs(DAG)
    output["columns"] = [
        {"name": f"column_{i:05d}", "type": "DECIMAL(18, 2)"} for i in range(6000)
    ]
    emit_complete(MANIFEST, DAG, make_run(DAG["dag_id"], "publish"), [output])
    emit_fail(
        MANIFEST,
        DAG,
        make_run(DAG["dag_id"], "audit"),
        RuntimeError("row 1 failed\n" * 20000),
        "audit",
    )

    raw = [
        line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    assert len(raw) == 3
    for line in raw:
        assert len(line.encode("utf-8")) <= cap
        event = json.loads(line)
        validate_event(event)
        shrink = event["run"]["facets"]["contractAssets_shrink"]
        assert (
            shrink["max_bytes"] == cap
            and shrink["original_bytes"] > cap
            and shrink["changes"]
        )
    assertions_event, complete_event, fail_event = (json.loads(line) for line in raw)
    kept = assertions_event["inputs"][0]["inputFacets"]["dataQualityAssertions"][
        "assertions"
    ]
    assert len(kept) == 50
    assert [a["name"] for a in kept if not a["success"]] == [
        f"rule_{i:05d}" for i in range(999, 5000, 1000)
    ]
    assert {
        c["path"]
        for c in assertions_event["run"]["facets"]["contractAssets_shrink"]["changes"]
    } == {"inputs[0].inputFacets.dataQualityAssertions"}
    fields = complete_event["outputs"][0]["facets"].get("schema", {}).get("fields", [])
    assert len(fields) <= 100
    assert (
        complete_event["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"]
        == 42
    )
    error = fail_event["run"]["facets"]["errorMessage"]
    assert error["message"].startswith("task audit failed: RuntimeError: row 1 failed")
    assert len(error["message"]) <= 4000
    assert "contractAssets_provenance" in fail_event["run"]["facets"]


def test_event_that_cannot_fit_is_not_sent_and_logged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A cap below the event's irreducible size: one line, no event, no exception."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    path = tmp_path / "events.jsonl"
    use_file_transport(monkeypatch, path)
    monkeypatch.setenv("CONTRACT_ASSETS_LINEAGE_MAX_BYTES", "2500")
    emit_start(MANIFEST, DAG, make_run(DAG["dag_id"]))
    assert read_events(path) == []
    (record,) = _lineage_warnings(caplog)
    assert "cap" in record.getMessage()


# --- secrets -----------------------------------------------------------------------------------

SECRETS = (
    "hunter2",
    "s3cr3t-token",
    "AKIA-do-not-leak",
    "pg-pass-9",
    "wh-pass-7",
    "bundle-pass",
)


@requires_spec
def test_no_secret_reaches_a_facet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Secret-looking params, URI user-info in params, identities and error texts are masked."""
    path = tmp_path / "events.jsonl"
    use_file_transport(monkeypatch, path)
    manifest = json.loads(json.dumps(MANIFEST))
    dag = dag_entry(manifest, "finance.invoices_curated")
    dag["runtime"]["producer"]["params"] = {
        "db_password": "hunter2",
        "apiToken": "s3cr3t-token",
        "nested": {
            "aws_secret_access_key": "AKIA-do-not-leak",
            "list": [{"key": "AKIA-do-not-leak"}],
        },
        "source_uri": "postgresql://etl:pg-pass-9@db.internal:5432/sales",
        "exclude_status": "void",
    }
    dataset = dag["runtime"]["datasets"][0]
    dataset["physical"] = {
        "namespace": "postgres://etl:pg-pass-9@db.internal:5432",
        "name": "sales.finance.invoices",
    }
    dataset["uri"] = "x-datalake://reader:bundle-pass@curated/finance/invoices_curated"
    run = make_run(dag["dag_id"])
    emit_start(manifest, dag, run)
    emit_assertions(manifest, dag, run, dataset, synthetic_results(dataset))
    outputs = synthetic_outputs(dag)
    outputs[0]["warehouse_namespace"] = "postgres://loader:wh-pass-7@wh.internal:5432"
    emit_complete(manifest, dag, run, outputs)
    error = ConnectionError(
        "could not connect to postgresql://etl:pg-pass-9@db.internal:5432/sales (password=hunter2, token: s3cr3t-token)"
    )
    emit_fail(manifest, dag, run, error, "produce")

    text = path.read_text(encoding="utf-8")
    for secret in SECRETS:
        assert secret not in text, secret
    events = read_events(path)
    assert len(events) == 4
    for event in events:
        validate_event(event)
    params = events[0]["run"]["facets"]["contractAssets_provenance"]["step_params"]
    assert params == {
        "db_password": "***",
        "apiToken": "***",
        "nested": {"aws_secret_access_key": "***", "list": [{"key": "***"}]},
        "source_uri": "postgresql://***@db.internal:5432/sales",
        "exclude_status": "void",
    }
    assert events[1]["inputs"][0]["namespace"] == "postgres://db.internal:5432"
    assert (
        events[1]["inputs"][0]["facets"]["symlinks"]["identifiers"][0]["namespace"]
        == "x-datalake://curated"
    )
    message = events[3]["run"]["facets"]["errorMessage"]["message"]
    assert (
        "postgresql://***@db.internal:5432/sales" in message
        and "password=***" in message
        and "token: ***" in message
    )


def test_secret_key_rule_and_text_masking() -> None:
    """The key rule and the text masks on their own."""
    for key in (
        "password",
        "DB_PASSWORD",
        "apiKey",
        "api-key",
        "client_secret",
        "refreshToken",
        "key",
        "pwd",
        "auth",
    ):
        assert is_secret_key(key), key
    for key in (
        "model_version",
        "reporting_currency",
        "monkey",
        "author",
        "first_period",
    ):
        assert not is_secret_key(key), key
    assert strip_userinfo("postgres://u:p@h:1/db") == "postgres://h:1/db"
    assert strip_userinfo("x-datalake://raw/a") == "x-datalake://raw/a"
    assert (
        mask_text("see s3://AK:SK@bucket/key and secret_key='abc def'")
        == "see s3://***@bucket/key and secret_key=***"
    )


def test_query_string_credentials_are_masked_in_text() -> None:
    """Signed URLs (Azure SAS, AWS SigV4 and SigV2, GCS V4) and tokens in a query string keep
    their other parameters and lose their credentials, in plain, quoted and JSON text."""
    cases = {
        "read 'https://acct.blob.core.windows.net/c/o.csv?sv=2022-11-02&se=2026-12-08&sig=AbC%2Bd%3D'":
            "read 'https://acct.blob.core.windows.net/c/o.csv?sv=2022-11-02&se=2026-12-08&sig=***'",
        "s3://b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAX%2F20261207&X-Amz-Signature=ab12"
        "&X-Amz-Security-Token=FQoG&X-Amz-Expires=60":
            "s3://b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=***&X-Amz-Signature=***"
            "&X-Amz-Security-Token=***&X-Amz-Expires=60",
        "https://s3.amazonaws.com/b/k?AWSAccessKeyId=AKIAX&Expires=1&Signature=c2ln":
            "https://s3.amazonaws.com/b/k?AWSAccessKeyId=***&Expires=1&Signature=***",
        "https://storage.googleapis.com/b/o?X-Goog-Credential=sa%40p&X-Goog-Signature=0f0f&X-Goog-Date=2026":
            "https://storage.googleapis.com/b/o?X-Goog-Credential=***&X-Goog-Signature=***&X-Goog-Date=2026",
        '{"uri": "https://api.example.com/x?access_token=ya29.abc&page=2"}':
            '{"uri": "https://api.example.com/x?access_token=***&page=2"}',
        "https://h/x?password=pw1&apiKey=k1&key=AIzaSyA": "https://h/x?password=***&apiKey=***&key=***",
        "https://h/x?sv=2022&sig=&page=1": "https://h/x?sv=2022&sig=&page=1",
    }
    for text, masked in cases.items():
        assert mask_uri_credentials(text) == masked, text
        assert mask_text(text) == masked, text
    for name in ("sig", "SIG", "X-Amz-Signature", "x_amz_credential", "X%2DGoog%2DSignature", "client_secret", "pwd"):
        assert is_query_credential(name), name
    for name in ("sv", "se", "sp", "X-Amz-Expires", "X-Amz-Date", "X-Goog-Date", "page", "prefix", "format"):
        assert not is_query_credential(name), name
    # Only URI credentials: a column named like a secret stays readable in a producer's message.
    assert mask_uri_credentials("type changed [auth_token: string -> integer]") == "type changed [auth_token: string -> integer]"


def test_namespace_helpers_follow_openlineage_naming() -> None:
    """Warehouse namespaces and location URIs as OpenLineage names them."""
    assert sql_warehouse_namespace(
        "postgresql+psycopg2://u:p@Warehouse.internal/analytics?sslmode=require"
    ) == ("postgres://warehouse.internal:5432")
    assert sql_warehouse_namespace("mysql://db:3307/x") == "mysql://db:3307"
    assert (
        duckdb_warehouse_namespace("/srv/lake/warehouse.duckdb")
        == "duckdb:///srv/lake/warehouse.duckdb"
    )
    assert duckdb_warehouse_namespace("warehouse.duckdb").startswith("duckdb:///")
    assert uri_identity("s3://acme-billing-exports/credit-notes") == (
        "s3://acme-billing-exports",
        "credit-notes",
    )
    assert uri_identity("hdfs://nn:8020/data/x") == ("hdfs://nn:8020", "/data/x")
    assert uri_identity("x-datalake://raw/billing/invoices_raw") is None


# --- overhead ----------------------------------------------------------------------------------


def test_overhead_per_emit_with_the_file_transport(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Median added time per emitted event (build + shrink check + thread + file write), 200 emits.

    Printed for the benchmark issue (run with ``-s`` to see it); asserted only loosely.
    """
    use_file_transport(monkeypatch, tmp_path / "events.jsonl")
    dataset = DAG["runtime"]["datasets"][0]
    results = synthetic_results(dataset)
    outputs = synthetic_outputs(DAG)
    run = make_run(DAG["dag_id"])
    emit_start(MANIFEST, DAG, run)  # warm-up: client construction, imports
    samples: dict[str, list[float]] = {"START": [], "OTHER": [], "COMPLETE": []}
    for _ in range(200):
        for kind, call in (
            ("START", lambda: emit_start(MANIFEST, DAG, run)),
            ("OTHER", lambda: emit_assertions(MANIFEST, DAG, run, dataset, results)),
            ("COMPLETE", lambda: emit_complete(MANIFEST, DAG, run, outputs)),
        ):
            started = time.perf_counter()
            call()
            samples[kind].append(time.perf_counter() - started)
    medians = {
        kind: statistics.median(values) * 1000 for kind, values in samples.items()
    }
    print(
        "lineage overhead per emit, file transport, median of 200 (ms): "
        + ", ".join(f"{k} {v:.2f}" for k, v in medians.items())
    )
    assert len(read_events(tmp_path / "events.jsonl")) == 601
    assert all(value < 50 for value in medians.values()), medians


# --- order with a backend that holds the first request -----------------------------------------


class StallingBackend(ThreadingHTTPServer):
    """A real HTTP/1.1 server on 127.0.0.1 that holds the first connection ``stall`` seconds:
    ``before-reading`` anything of it (a busy backend: the request waits in its socket), or
    ``after-reading`` its body (a backend slow to store what it took up), then serves it like
    every other. ``received`` records, in the order the server finished reading them, each
    request's event type and whether its whole body arrived (``Content-Length`` bytes)."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, stall: float, where: str = "before-reading") -> None:
        self.stall = stall
        self.where = where
        self.first = threading.Lock()
        self.received: list[tuple[str | None, bool]] = []
        self.done = threading.Event()
        super().__init__(("127.0.0.1", 0), _StallingHandler)


class _StallingHandler(BaseHTTPRequestHandler):
    server: StallingBackend
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.held = self.server.first.acquire(blocking=False)
        if self.held and self.server.where == "before-reading":
            time.sleep(self.server.stall)

    def do_POST(self) -> None:
        expected = int(self.headers.get("Content-Length") or 0)
        try:
            body = self.rfile.read(expected)
        except OSError:
            body = b""
        whole = len(body) == expected
        kind = json.loads(body).get("eventType") if whole else None
        self.server.received.append((kind, whole))
        if self.held and self.server.where == "after-reading":
            time.sleep(self.server.stall)
        try:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except OSError:
            pass
        self.close_connection = True

    def finish(self) -> None:
        super().finish()
        if getattr(self, "held", False):
            self.server.done.set()

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.mark.parametrize("budget", [2.0, None], ids=["2s", "default-5s"])
def test_a_start_the_backend_holds_never_reaches_it_after_complete(
    budget: float | None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 38 item 6: the backend holds the first request (START, from ``produce``) longer than
    the budget, then serves everything. ``publish``'s COMPLETE (its own task try and budget)
    reaches it at once. START's body must not reach the backend after COMPLETE: it is withdrawn
    unsent (no 100 Continue came), with one warning saying so, and never delivered."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    seconds = budget or 5.0
    server = StallingBackend(stall=seconds + 1.5)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        use_http_transport(monkeypatch, f"http://127.0.0.1:{server.server_port}", timeout=seconds, retries=0)
        if budget is None:
            monkeypatch.delenv("CONTRACT_ASSETS_LINEAGE_TIMEOUT")
        started = time.monotonic()
        emit_start(MANIFEST, DAG, make_run(DAG["dag_id"], "produce"))
        assert time.monotonic() - started < seconds + MARGIN
        emit_complete(MANIFEST, DAG, make_run(DAG["dag_id"], "publish"), synthetic_outputs(DAG))
        assert server.done.wait(seconds + 5), "the held request was never served"
        time.sleep(0.2)
        delivered = [kind for kind, whole in server.received if whole]
        assert delivered == ["COMPLETE"], server.received
        assert (None, False) in server.received  # START: its head, never its body
        (line,) = [r.getMessage() for r in _lineage_warnings(caplog)]
        assert "START event of finance.invoices_curated" in line and "withdrawn before its body was sent" in line
    finally:
        server.shutdown()
        server.server_close()


def test_a_start_the_backend_took_up_but_answers_late_reached_it_before_complete(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The other stall: the backend asks for START's body (100 Continue), reads it, and answers
    after the budget. START is not confirmed (one warning), but its body reached the backend
    before COMPLETE was sent: arrival order START, COMPLETE (ADR 0026)."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server = StallingBackend(stall=3.5, where="after-reading")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        use_http_transport(monkeypatch, f"http://127.0.0.1:{server.server_port}", timeout=2.0, retries=0)
        emit_start(MANIFEST, DAG, make_run(DAG["dag_id"], "produce"))
        emit_complete(MANIFEST, DAG, make_run(DAG["dag_id"], "publish"), synthetic_outputs(DAG))
        assert server.done.wait(10)
        assert server.received == [("START", True), ("COMPLETE", True)]
        (line,) = [r.getMessage() for r in _lineage_warnings(caplog)]
        assert "START" in line and "not confirmed within 2.0 s: no answer from the backend; the task goes on" in line
    finally:
        server.shutdown()
        server.server_close()


def test_without_expect_continue_the_body_goes_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``CONTRACT_ASSETS_LINEAGE_EXPECT_CONTINUE=false`` (a backend that ignores the expectation):
    no ``Expect`` header, the body with the head; the event is delivered."""
    server = StallingBackend(stall=0.0)
    seen: list[str | None] = []
    original = _StallingHandler.do_POST

    def record(handler: _StallingHandler) -> None:
        seen.append(handler.headers.get("Expect"))
        original(handler)

    monkeypatch.setattr(_StallingHandler, "do_POST", record)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        use_http_transport(monkeypatch, f"http://127.0.0.1:{server.server_port}", timeout=2.0, retries=0)
        emit_start(MANIFEST, DAG, make_run(DAG["dag_id"], "produce"))
        monkeypatch.setenv("CONTRACT_ASSETS_LINEAGE_EXPECT_CONTINUE", "false")
        emit_complete(MANIFEST, DAG, make_run(DAG["dag_id"], "publish"), synthetic_outputs(DAG))
        assert server.received == [("START", True), ("COMPLETE", True)]
        assert seen == ["100-continue", None]
    finally:
        server.shutdown()
        server.server_close()
