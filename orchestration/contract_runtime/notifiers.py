"""A notifier for local runs and tests: each notification appended to a JSON-lines file.

Production alerts go through the Airflow providers' notifiers, named in the orchestration config's
``notifiers`` (``airflow.providers.smtp.notifications.smtp.SmtpNotifier``,
``airflow.providers.http.notifications.HttpNotifier`` for a webhook). :class:`FileNotifier` is the
same kind of object (an :class:`airflow.sdk.BaseNotifier`, synchronous and asynchronous), so the
demo and the live tests run the real code path — the freshness monitor's transitions and the
triggerer's deadline callbacks — and can read what was sent.

One line per call: ``{"kind": "freshness" | "deadline", "message": <rendered template>,
"freshness": <the monitor's entry> | null, "context": {<the str/int/float/bool values of the
callback context, plus a deadline's ``dag_id`` and ``dag_run_id``>}}``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from airflow.sdk import BaseNotifier

__all__ = ["FileNotifier"]


class FileNotifier(BaseNotifier):
    """Append each notification to ``path`` as one JSON line.

    :param path: The file; its folder must exist. Appends are single ``write`` calls of one line.
    :param message: A Jinja template rendered with the context: ``freshness`` holds the monitor's
        entry for a freshness transition; a deadline callback has ``dag_run`` and ``deadline``
        instead. Airflow renders with ``StrictUndefined``, so test ``freshness is defined``.
    :param context: Set by the triggerer for a deadline callback (``AsyncCallback``).
    """

    template_fields = ("message",)

    def __init__(
        self,
        *,
        path: str,
        message: str = (
            "{% if freshness is defined %}{{ freshness.asset }}: {{ freshness.state }}"
            "{% else %}deadline missed: {{ dag_run.dag_id }}{% endif %}"
        ),
        context: Any = None,
    ) -> None:
        super().__init__(context=context)
        self.path = path
        self.message = message

    def _write(self, context: Any) -> None:
        mapping = dict(context) if isinstance(context, dict) else {}
        freshness = mapping.get("freshness")
        simple = {k: v for k, v in mapping.items() if isinstance(v, (str, int, float, bool))}
        # A deadline callback's context is {"dag_run": {...}, "deadline": {...}} (DAGRunResponse JSON).
        dag_run = mapping.get("dag_run")
        if isinstance(dag_run, dict):
            simple.update({k: dag_run[k] for k in ("dag_id", "dag_run_id") if isinstance(dag_run.get(k), str)})
        line = json.dumps(
            {
                "kind": "freshness" if freshness else "deadline",
                "message": self.message,
                "freshness": freshness,
                "context": {k: simple[k] for k in sorted(simple)},
            },
            sort_keys=True,
            default=str,
        )
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    def notify(self, context: Any) -> None:
        """Append one line (synchronous: the freshness monitor, task callbacks)."""
        self._write(context)

    async def async_notify(self, context: Any) -> None:
        """Append one line (asynchronous: a DeadlineAlert callback in the triggerer)."""
        self._write(context)
