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
  attempt never starts after the caller stopped waiting, so an abandoned send is never delivered
  after the run's terminal event (see :func:`send`).
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

import logging
import os
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from openlineage.client.event_v2 import RunEvent

from contract_runtime.redact import mask_text
from contract_runtime.lineage.shrink import shrink_event

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT_SECONDS",
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


def _emit_http(client: Any, event: RunEvent, deadline: float, abandoned: threading.Event) -> int:
    """Emit through the client's HTTP transport with our own bounded retries; returns attempts.

    The client's own retry series (urllib3, 5 tries with backoff by default) is replaced for this
    send by a session without retries, so every attempt is ours: it starts only while time is left
    and the caller still waits, and its socket timeout is the time left, so no attempt outlives
    the budget and an abandoned send is never delivered later.
    """
    import requests
    import urllib3

    transport = client.transport
    session = requests.Session()
    transport.session = session  # the setter mounts the client's adapter; ours replaces it
    session.mount(transport.url, requests.adapters.HTTPAdapter(max_retries=urllib3.util.Retry(total=0, raise_on_status=False)))
    attempts = 0
    try:
        for attempt in range(retries() + 1):
            left = deadline - time.monotonic()
            if abandoned.is_set() or left <= 0:
                raise _Abandoned()
            transport.timeout = left
            attempts += 1
            try:
                client.emit(event)
                return attempts
            except Exception as error:
                cause, retryable = _http_cause(error)
                if not retryable or attempt == retries():
                    raise _Undelivered(cause, error, attempts) from error
            pause = min(BACKOFF_SECONDS * 2**attempt, deadline - time.monotonic())
            if pause > 0 and abandoned.wait(pause):
                raise _Abandoned()
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
    finally:
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

    **No late delivery**: over HTTP every attempt (the first and :func:`retries` more, with
    backoff) starts only before the send's deadline and times out at it; once the caller stops
    waiting no attempt starts. A backend that already received the request may still record it;
    the client never sends it after the deadline.

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
    abandoned = threading.Event()
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
                outcome["attempts"] = _emit_http(client, shrunk, deadline, abandoned)
            else:
                client.emit(shrunk)
            outcome["sent"] = True
        except _Abandoned:
            return
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
        abandoned.set()
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
    if "undelivered" in outcome:
        failure: _Undelivered = outcome["undelivered"]
        if failure.cause.startswith("no answer"):
            log.warning(
                "lineage: %s not confirmed within %.1f s: no answer from the backend; the task goes on",
                what,
                left,
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
