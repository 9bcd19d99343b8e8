"""Send events through the openlineage-python client without ever hurting the task (DESIGN §6.4).

* **Configuration** is the client's own: ``OpenLineageClient()`` reads ``OPENLINEAGE__TRANSPORT__*``
  env vars, the file named by ``OPENLINEAGE_CONFIG``, ``./openlineage.yml``,
  ``~/.openlineage/openlineage.yml``, ``OPENLINEAGE_URL``; without any it prints events to the
  console (the client's default). One client per configuration is kept per process.
* **Off switch**: ``OPENLINEAGE_DISABLED=true`` (the client's own setting) sends nothing; the emit
  hook returns before building the event.
* **Bounded, one budget per task**: building the event, shrinking it and the client's ``emit``
  run in a daemon thread the caller waits for; all events of one task try share one budget of
  ``CONTRACT_ASSETS_LINEAGE_TIMEOUT`` seconds (default 5), so a failing task that could not send
  START spends no second timeout on FAIL. Over HTTP, retries are ours:
  ``CONTRACT_ASSETS_LINEAGE_RETRIES`` (default 2, at most 10) more attempts on HTTP 500/502/503/504
  or a refused connection, with backoff, each inside the budget and timing out at its end. An
  attempt never starts after the caller stopped waiting.
* **Order** (ADR 0026): over HTTP each request goes out with ``Expect: 100-continue`` and its body
  only after the backend's ``100 Continue`` (:func:`_post`; ``CONTRACT_ASSETS_LINEAGE_EXPECT_CONTINUE=false``
  sends it at once, for a backend that ignores the expectation); a request the backend has not taken
  up by the deadline is withdrawn with its body unsent, so the backend never completes it later.
  When :func:`send` returns, the event's body has reached the backend's connection or never
  will: events of one run, sent one after another by its tasks, reach the backend in that order,
  and no START lands after the run's terminal event.
* **Quiet failures**: any failure (refused connection, HTTP 500, timeout, bad configuration) is
  logged as exactly one WARNING line on the ``contract_runtime.lineage`` logger that names the
  cause (``the backend answered HTTP 500 …``, ``the backend is unreachable (…)``, ``not confirmed
  within … s: no answer from the backend``, ``the task's lineage budget … is spent``) and never raised;
  a confirmed emit logs one INFO line ``lineage: <TYPE> event of <dag_id> (run <runId>) sent``
  (what ``scripts/localrun.py lineage`` counts when the transport is not a file).
* **Size cap**: ``CONTRACT_ASSETS_LINEAGE_MAX_BYTES`` (default 300000) — see
  :mod:`contract_runtime.lineage.shrink`.
"""

from __future__ import annotations

import base64
import http.client
import logging
import os
import select
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Hashable
from typing import Any

from openlineage.client.event_v2 import RunEvent

from contract_runtime.redact import mask_text
from contract_runtime.lineage.shrink import shrink_event

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT_SECONDS",
    "expect_continue",
    "lineage_disabled",
    "max_event_bytes",
    "retries",
    "send",
    "timeout_seconds",
]

log = logging.getLogger("contract_runtime.lineage")

DEFAULT_TIMEOUT_SECONDS: float = 5.0
DEFAULT_MAX_BYTES: int = 300_000
DEFAULT_RETRIES: int = 2
MAX_RETRIES: int = 10
#: HTTP statuses worth another attempt (the openlineage client's own status_forcelist).
RETRY_STATUSES: frozenset[int] = frozenset({500, 502, 503, 504})
#: First pause between attempts, doubled after each (seconds).
BACKOFF_SECONDS: float = 0.2
#: Below this much budget left a send is not attempted (seconds).
MIN_SEND_SECONDS: float = 0.05
JOIN_GRACE_SECONDS: float = 0.25
#: Longest interim (``100``) or early final response head read before the body is sent (bytes).
_MAX_HEAD_BYTES: int = 65536
_BUDGET_KEYS_KEPT = 256

_spent: dict[Hashable, float] = {}
_budget_lock = threading.Lock()

_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


def lineage_disabled() -> bool:
    """True when the openlineage client is switched off (``OPENLINEAGE_DISABLED=true``)."""
    return os.environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true"


def timeout_seconds() -> float:
    """The lineage budget of one task try in seconds, shared by all its events:
    ``CONTRACT_ASSETS_LINEAGE_TIMEOUT``, default 5; invalid or non-positive values fall back to
    the default."""
    return float(
        _positive(
            os.environ.get("CONTRACT_ASSETS_LINEAGE_TIMEOUT"),
            DEFAULT_TIMEOUT_SECONDS,
            float,
        )
    )


def max_event_bytes() -> int:
    """The size cap in bytes: ``CONTRACT_ASSETS_LINEAGE_MAX_BYTES``, default 300000."""
    return int(
        _positive(
            os.environ.get("CONTRACT_ASSETS_LINEAGE_MAX_BYTES"), DEFAULT_MAX_BYTES, int
        )
    )


def _positive(raw: str | None, default: float, kind: type) -> Any:
    if raw is None or not raw.strip():
        return default
    try:
        value = kind(raw.strip())
    except ValueError:
        return default
    return value if value > 0 else default


def _client_key() -> tuple[Any, ...]:
    """What the client's configuration depends on: OPENLINEAGE* env vars and the working directory."""
    env = tuple(
        sorted((k, v) for k, v in os.environ.items() if k.startswith("OPENLINEAGE"))
    )
    return env, os.getcwd()


def _client() -> Any:
    """The process's OpenLineageClient for the current configuration (built on first use)."""
    from openlineage.client import OpenLineageClient

    key = _client_key()
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = OpenLineageClient()
            # The client may alias env vars while it is built (OPENLINEAGE_URL); key both states.
            _clients[key] = client
            _clients[_client_key()] = client
    return client


def one_line(error: BaseException) -> str:
    """``Type: message`` on one line, at most 300 characters, credentials masked."""
    text = mask_text(" ".join(str(error).split()))
    line = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return line if len(line) <= 300 else line[:299] + "\u2026"


def retries() -> int:
    """Retries of a failed HTTP send: ``CONTRACT_ASSETS_LINEAGE_RETRIES``, default 2, at most
    :data:`MAX_RETRIES`; invalid or negative values fall back to the default. Retried: HTTP 500,
    502, 503, 504 and refused or dropped connections, each retry inside the task's budget."""
    raw = os.environ.get("CONTRACT_ASSETS_LINEAGE_RETRIES")
    if raw is None or not raw.strip():
        return DEFAULT_RETRIES
    try:
        value = int(raw.strip())
    except ValueError:
        return DEFAULT_RETRIES
    return min(value, MAX_RETRIES) if value >= 0 else DEFAULT_RETRIES


def expect_continue() -> bool:
    """Whether HTTP sends wait for the backend's ``100 Continue`` before their body:
    ``CONTRACT_ASSETS_LINEAGE_EXPECT_CONTINUE``, default true; ``false`` for a backend that ignores
    the expectation (an HTTP/1.0 server, which otherwise never gets an event), at the cost of the
    order guarantee (ADR 0026)."""
    return os.environ.get("CONTRACT_ASSETS_LINEAGE_EXPECT_CONTINUE", "").strip().lower() != "false"


def _spend(key: Hashable | None, seconds: float) -> None:
    if key is None:
        return
    with _budget_lock:
        _spent[key] = _spent.pop(key, 0.0) + seconds
        while len(_spent) > _BUDGET_KEYS_KEPT:
            _spent.pop(next(iter(_spent)))


def _remaining(key: Hashable | None) -> float:
    budget = timeout_seconds()
    if key is None:
        return budget
    with _budget_lock:
        return budget - _spent.get(key, 0.0)


class _Abandoned(Exception):
    """The caller stopped waiting: no further attempt may start."""


class _Undelivered(Exception):
    """Every attempt failed; ``cause`` says why in words, ``error`` is the last exception."""

    def __init__(self, cause: str, error: BaseException, attempts: int) -> None:
        super().__init__(cause)
        self.cause = cause
        self.error = error
        self.attempts = attempts


class _Withdrawn(Exception):
    """The backend did not take the request up (no ``100 Continue``, no answer) by the deadline;
    the connection was closed with the body unsent, so the backend can never complete it."""


class _HttpStatus(Exception):
    """The backend answered with an error status."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status} {reason}".rstrip())
        self.status = status
        self.reason = reason


class _Gate:
    """Orders the body's send against the caller's abandoning the send: the body goes out before
    the caller stops waiting, or never (one lock around both)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.abandoned = threading.Event()
        #: True once a body was handed to the backend without its ``100 Continue`` (it ignored the
        #: expectation): such a request may still complete after the deadline.
        self.unasked = False

    def abandon(self) -> None:
        with self.lock:
            self.abandoned.set()


def _direct(url: str) -> bool:
    """Whether ``url`` is reached without a proxy from the environment (else the client's own
    ``requests`` session sends, with the proxy, and :func:`_post` does not apply)."""
    host = urllib.parse.urlsplit(url).hostname or ""
    scheme = urllib.parse.urlsplit(url).scheme
    proxies = urllib.request.getproxies()
    return scheme not in proxies or bool(urllib.request.proxy_bypass(host))


def _ssl_context(transport: Any) -> ssl.SSLContext:
    verify = getattr(transport, "verify", True)
    context = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
    if verify is False:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    cert = getattr(transport, "cert", None)
    if isinstance(cert, tuple):
        context.load_cert_chain(cert[0], cert[1])
    elif isinstance(cert, str):
        context.load_cert_chain(cert)
    return context


def _read_head(sock: socket.socket, deadline: float) -> tuple[int, str, dict[str, str]]:
    """One response head (status line and headers) read byte by byte, so nothing after it is taken
    from the socket: ``(status, reason, headers lower-cased)``.

    :raises TimeoutError: Past the deadline. :raises ConnectionError: The backend closed.
    """
    data = b""
    while not data.endswith(b"\r\n\r\n"):
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionResetError("the backend closed the connection")
        data += chunk
        if len(data) > _MAX_HEAD_BYTES:
            raise ConnectionError("response head too long")
    lines = data.decode("iso-8859-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    status = int(parts[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    return status, parts[2] if len(parts) > 2 else "", headers


def _post(transport: Any, event: RunEvent, deadline: float, gate: _Gate, *, expect: bool | None = None) -> None:
    """POST one event to the client's HTTP transport (its URL, endpoint, headers, auth, compression,
    TLS settings), the body only once the backend asks for it.

    Sequence: connect; send the head with ``Expect: 100-continue``; wait for the backend's
    ``100 Continue`` until the deadline — without an interim answer by then the connection is
    closed and the body was never sent (:class:`_Withdrawn`): the backend holds a head whose body
    never comes and completes nothing; a final answer before the body (e.g. 401, 417) ends the
    attempt (417: once more without the expectation, the body sent unasked). With
    ``expect=False`` (:func:`expect_continue` off) the body follows the head at once. Then the body (under the gate's
    lock, unless the caller stopped waiting) and the final answer, read until the deadline, after
    which the socket is shut.

    :raises _Withdrawn: Nothing taken up by the deadline.
    :raises _HttpStatus: An answer of 400 or more.
    :raises _Abandoned: The caller stopped waiting before the body was sent.
    :raises OSError: Connection refused or reset, a timeout (``TimeoutError``), TLS failures.
    """
    from openlineage.client.serde import Serde

    if expect is None:
        expect = expect_continue()
    url = urllib.parse.urljoin(transport.url, transport.endpoint)
    parts = urllib.parse.urlsplit(url)
    body, headers = transport._prepare_request(Serde.to_json(event))
    data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    headers = dict(headers)
    if parts.username is not None and not any(k.lower() == "authorization" for k in headers):
        # what requests does with user-info in the URL
        pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    left = max(deadline - time.monotonic(), 0.001)
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=left, context=_ssl_context(transport)
        )
    else:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=left)
    timer: threading.Timer | None = None
    try:
        connection.connect()
        sock = connection.sock
        assert sock is not None
        connection.putrequest("POST", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                              skip_accept_encoding=True)
        for key, value in headers.items():
            connection.putheader(key, value)
        connection.putheader("Content-Length", str(len(data)))
        if expect:
            connection.putheader("Expect", "100-continue")
        connection.endheaders()
        unasked = not expect
        if expect:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([sock], [], [], wait)[0]:
                raise _Withdrawn()
            status, reason, _ = _read_head(sock, deadline)
            if status == 417:
                connection.close()
                return _post(transport, event, deadline, gate, expect=False)
            if status >= 400:
                raise _HttpStatus(status, reason)
            if status != 100:
                return
        with gate.lock:
            if gate.abandoned.is_set():
                raise _Abandoned()
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            gate.unasked = unasked
            sock.sendall(data)
        # a backend trickling its answer may not hold the attempt past the deadline
        timer = threading.Timer(max(deadline - time.monotonic(), 0.0), _shut, (sock,))
        timer.daemon = True
        timer.start()
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        response = connection.getresponse()
        response.read(_MAX_HEAD_BYTES)
        if response.status >= 400:
            raise _HttpStatus(response.status, response.reason)
    except (http.client.HTTPException, OSError) as error:
        if time.monotonic() >= deadline and not isinstance(error, TimeoutError):
            raise TimeoutError("no answer before the deadline") from error
        if isinstance(error, http.client.HTTPException):
            raise ConnectionResetError(one_line(error)) from error
        raise
    finally:
        if timer is not None:
            timer.cancel()
        connection.close()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _post_cause(error: BaseException) -> tuple[str, bool]:
    """``(cause in words, retryable)`` of a :func:`_post` failure."""
    if isinstance(error, _HttpStatus):
        return f"the backend answered HTTP {error.status} {error.reason}".rstrip(), error.status in RETRY_STATUSES
    if isinstance(error, TimeoutError):
        return "no answer from the backend in time", False
    if isinstance(error, ssl.SSLError):
        return one_line(error), False
    if isinstance(error, OSError):
        return f"the backend is unreachable ({one_line(error)})", True
    return one_line(error), False


def _http_cause(error: BaseException) -> tuple[str, bool]:
    """``(cause in words, retryable)`` of an HTTP transport failure (requests exceptions)."""
    import requests

    if isinstance(error, requests.exceptions.HTTPError) and error.response is not None:
        status = error.response.status_code
        reason = error.response.reason or ""
        return f"the backend answered HTTP {status} {reason}".rstrip(), status in RETRY_STATUSES
    if isinstance(error, requests.exceptions.Timeout):
        return "no answer from the backend in time", False
    if isinstance(error, requests.exceptions.ConnectionError):
        return f"the backend is unreachable ({one_line(error)})", True
    return one_line(error), False


def _emit_http(client: Any, event: RunEvent, deadline: float, gate: _Gate) -> int:
    """Emit through the client's HTTP transport with our own bounded retries; returns attempts.

    Each attempt is :func:`_post` (the body only once the backend takes the request up); it starts
    only while time is left and the caller still waits. Through a proxy from the environment the
    client's own ``requests`` session sends instead (its retries replaced by none, its timeout the
    time left): the order guarantee of :func:`_post` does not hold there (ADR 0026).
    """
    transport = client.transport
    direct = _direct(urllib.parse.urljoin(transport.url, transport.endpoint)) and hasattr(transport, "_prepare_request")
    session = None
    if not direct:
        import requests
        import urllib3

        session = requests.Session()
        transport.session = session  # the setter mounts the client's adapter; ours replaces it
        session.mount(transport.url, requests.adapters.HTTPAdapter(max_retries=urllib3.util.Retry(total=0, raise_on_status=False)))
    attempts = 0
    try:
        for attempt in range(retries() + 1):
            left = deadline - time.monotonic()
            if gate.abandoned.is_set() or left <= 0:
                raise _Abandoned()
            attempts += 1
            try:
                if direct:
                    _post(transport, event, deadline, gate)
                else:
                    transport.timeout = left
                    client.emit(event)
                return attempts
            except (_Abandoned, _Withdrawn):
                raise
            except Exception as error:
                cause, retryable = _post_cause(error) if direct else _http_cause(error)
                if not retryable or attempt == retries():
                    raise _Undelivered(cause, error, attempts) from error
            pause = min(BACKOFF_SECONDS * 2**attempt, deadline - time.monotonic())
            if pause > 0 and gate.abandoned.wait(pause):
                raise _Abandoned()
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
    finally:
        if session is not None:
            session.close()


def send(
    kind: str, dag_id: str, build: Callable[[], RunEvent], budget_key: Hashable | None = None
) -> bool:
    """Build, shrink and emit one event inside the task's lineage budget.

    Building runs inside the bounded worker too: the first event of a process may import the
    Airflow OpenLineage provider (about 2 s inside a task process), and a pathological event may
    take long to shrink; neither may hold the task longer than the budget.

    **Budget** (DESIGN §6.4, ADR 0016): every event of one task try (``budget_key``) shares
    :func:`timeout_seconds`: a send waits at most what earlier sends of the task left, and a send
    with nothing left is not attempted. Without a key each send gets the whole budget.

    **No late delivery, order kept** (ADR 0026): over HTTP every attempt (the first and
    :func:`retries` more, with backoff) starts only before the send's deadline and ends at it; the
    body goes only after the backend's ``100 Continue``, and never once the caller stopped waiting.
    A request the backend did not take up in time is withdrawn unsent (the warning says so). So
    when this returns, the body has reached the backend's connection or never will, and the next
    event of the run (sent after this returned, by this task or a later one) reaches it after.
    Limits: with :func:`expect_continue` off, or after a backend's 417, the body goes unasked and
    a backend holding it may complete it after the deadline (the warning says it may); a proxy
    from the environment is used through the client's own session; between its ``100 Continue``
    and reading the body the backend is in control.

    :param kind: ``START`` | ``OTHER`` | ``COMPLETE`` | ``FAIL`` (for log lines).
    :param dag_id: The contract's dag_id (for log lines).
    :param build: Returns the event; called in the worker thread.
    :param budget_key: Identifies the task try whose budget this send draws on, e.g.
        ``(dag_id, run_id, task_id, try_number, map_index)``.
    :returns: True when the client confirmed the emit in time; False otherwise (exactly one
        WARNING line logged, naming the cause: an HTTP status, an unreachable backend, no answer
        in time, the budget spent, an event over the cap). Never raises.
    """
    left = _remaining(budget_key)
    if left <= MIN_SEND_SECONDS:
        log.warning(
            "lineage: %s event of %s not sent: the task's lineage budget of %.1f s is spent",
            kind,
            dag_id,
            timeout_seconds(),
        )
        return False
    started = time.monotonic()
    deadline = started + left
    gate = _Gate()
    abandoned = gate.abandoned
    outcome: dict[str, Any] = {}

    def deliver() -> None:
        try:
            event = build()
            outcome["run_id"] = event.run.runId
        except BaseException as error:  # noqa: BLE001 - reported by the waiting thread, never raised
            outcome["error"] = ("not built", error)
            return
        try:
            cap = max_event_bytes()
            shrunk, original = shrink_event(event, cap)
            if shrunk is None:
                outcome["over_cap"] = (original, cap)
                return
            client = _client()
            if abandoned.is_set():
                return
            if getattr(getattr(client, "transport", None), "kind", None) == "http":
                outcome["attempts"] = _emit_http(client, shrunk, deadline, gate)
            else:
                client.emit(shrunk)
            outcome["sent"] = True
        except _Abandoned:
            return
        except _Withdrawn:
            outcome["withdrawn"] = True
        except _Undelivered as failure:
            outcome["undelivered"] = failure
        except BaseException as error:  # noqa: BLE001 - same
            outcome["error"] = ("not sent", error)

    worker = threading.Thread(
        target=deliver, name="contract-assets-lineage-emit", daemon=True
    )
    worker.start()
    # A little grace past the deadline, so an attempt timing out at it reports its own cause.
    worker.join(left + JOIN_GRACE_SECONDS)
    if worker.is_alive():
        # after this no body of this send goes out (the worker checks under the same lock)
        gate.abandon()
    _spend(budget_key, time.monotonic() - started)
    what = f"{kind} event of {dag_id}" + (
        f" (run {outcome['run_id']})" if "run_id" in outcome else ""
    )
    if worker.is_alive():
        log.warning(
            "lineage: %s not confirmed within %.1f s: no answer from the backend; the send is "
            "abandoned and will not be delivered later; the task goes on",
            what,
            left,
        )
        return False
    if "over_cap" in outcome:
        original, cap = outcome["over_cap"]
        log.warning(
            "lineage: %s not sent: %d bytes, still over the %d-byte cap after dropping every droppable facet",
            what,
            original,
            cap,
        )
        return False
    if "withdrawn" in outcome:
        log.warning(
            "lineage: %s not sent: the backend did not take the request up within %.1f s (no 100 Continue); "
            "it was withdrawn before its body was sent, so it is never delivered later; the task goes on",
            what,
            left,
        )
        return False
    if "undelivered" in outcome:
        failure: _Undelivered = outcome["undelivered"]
        if failure.cause.startswith("no answer"):
            log.warning(
                "lineage: %s not confirmed within %.1f s: no answer from the backend%s; the task goes on",
                what,
                left,
                " (its body went without the backend's 100 Continue: the backend may still complete it later)"
                if gate.unasked
                else "",
            )
        else:
            log.warning(
                "lineage: %s not sent: %s (%d attempt%s)",
                what,
                failure.cause,
                failure.attempts,
                "" if failure.attempts == 1 else "s",
            )
        return False
    if "error" in outcome:
        verb, error = outcome["error"]
        log.warning("lineage: %s %s: %s", what, verb, one_line(error))
        return False
    if "sent" not in outcome:
        log.warning("lineage: %s not sent: the task's lineage budget of %.1f s is spent", what, timeout_seconds())
        return False
    log.info("lineage: %s sent", what)
    return True
