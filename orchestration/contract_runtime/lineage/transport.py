"""Send events through the openlineage-python client without ever hurting the task (DESIGN §6.4).

* **Configuration** is the client's own: ``OpenLineageClient()`` reads ``OPENLINEAGE__TRANSPORT__*``
  env vars, the file named by ``OPENLINEAGE_CONFIG``, ``./openlineage.yml``,
  ``~/.openlineage/openlineage.yml``, ``OPENLINEAGE_URL``; without any it prints events to the
  console (the client's default). One client per configuration is kept per process.
* **Off switch**: ``OPENLINEAGE_DISABLED=true`` (the client's own setting) sends nothing; the emit
  hook returns before building the event.
* **Bounded**: building the event, shrinking it and the client's ``emit`` run in a daemon thread
  that the caller waits for at most ``CONTRACT_ASSETS_LINEAGE_TIMEOUT`` seconds (default 5). A slow
  backend keeps only that daemon thread, never the task; an event not sent within the bound may
  still be delivered later by that thread, or be lost when the task process exits.
* **Quiet failures**: any failure (refused connection, HTTP 500, timeout, bad configuration) is
  logged as exactly one WARNING line on the ``contract_runtime.lineage`` logger and never raised;
  a confirmed emit logs one INFO line ``lineage: <TYPE> event of <dag_id> (run <runId>) sent``
  (what ``scripts/localrun.py lineage`` counts when the transport is not a file).
  (The transport library may log its own retries; that is its configuration.)
* **Size cap**: ``CONTRACT_ASSETS_LINEAGE_MAX_BYTES`` (default 300000) — see
  :mod:`contract_runtime.lineage.shrink`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from openlineage.client.event_v2 import RunEvent

from contract_runtime.lineage.redact import mask_text
from contract_runtime.lineage.shrink import shrink_event

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT_SECONDS",
    "lineage_disabled",
    "max_event_bytes",
    "send",
    "timeout_seconds",
]

log = logging.getLogger("contract_runtime.lineage")

DEFAULT_TIMEOUT_SECONDS: float = 5.0
DEFAULT_MAX_BYTES: int = 300_000

_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


def lineage_disabled() -> bool:
    """True when the openlineage client is switched off (``OPENLINEAGE_DISABLED=true``)."""
    return os.environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true"


def timeout_seconds() -> float:
    """The per-emit bound in seconds: ``CONTRACT_ASSETS_LINEAGE_TIMEOUT``, default 5; invalid or
    non-positive values fall back to the default."""
    return _positive(
        os.environ.get("CONTRACT_ASSETS_LINEAGE_TIMEOUT"),
        DEFAULT_TIMEOUT_SECONDS,
        float,
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


def send(kind: str, dag_id: str, build: Callable[[], RunEvent]) -> bool:
    """Build, shrink and emit one event, waiting at most :func:`timeout_seconds` for all of it.

    Building runs inside the bounded worker too: the first event of a process may import the
    Airflow OpenLineage provider (about 2 s inside a task process), and a pathological event may
    take long to shrink; neither may hold the task longer than the bound.

    :param kind: ``START`` | ``OTHER`` | ``COMPLETE`` | ``FAIL`` (for log lines).
    :param dag_id: The contract's dag_id (for log lines).
    :param build: Returns the event; called in the worker thread.
    :returns: True when the client confirmed the emit within the bound; False otherwise (exactly
        one WARNING line logged). Never raises.
    """
    timeout = timeout_seconds()
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
            _client().emit(shrunk)
            outcome["sent"] = True
        except BaseException as error:  # noqa: BLE001 - same
            outcome["error"] = ("not sent", error)

    worker = threading.Thread(
        target=deliver, name="contract-assets-lineage-emit", daemon=True
    )
    worker.start()
    worker.join(timeout)
    what = f"{kind} event of {dag_id}" + (
        f" (run {outcome['run_id']})" if "run_id" in outcome else ""
    )
    if worker.is_alive():
        log.warning(
            "lineage: %s not confirmed within %.1f s (backend slow or unreachable); the task goes on",
            what,
            timeout,
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
    if "error" in outcome:
        verb, error = outcome["error"]
        log.warning("lineage: %s %s: %s", what, verb, one_line(error))
        return False
    log.info("lineage: %s sent", what)
    return True
