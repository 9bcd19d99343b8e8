"""``[core] hostname_callable`` of the live stack's Celery workers (scripts/livestack.py).

Two workers on one machine have one fully qualified domain name; each says its own name
(``CONTRACT_ASSETS_WORKER_NAME``, ``ca-worker-<n>``), which the Task SDK reports as the task
instance's ``hostname`` when the task starts. Falls back to the machine's name.
"""

from __future__ import annotations

import os
import socket


def hostname() -> str:
    """The worker's name, else ``socket.getfqdn()``."""
    return os.environ.get("CONTRACT_ASSETS_WORKER_NAME") or socket.getfqdn()
