"""The runtime's exception classes that more than one layer raises.

Kept in a module of its own at the bottom of the runtime's layers (ARCHITECTURE.md, Layering), so
a service such as :mod:`contract_runtime.objectstore` can raise what a producer raises without
importing the producers that call it.
"""

from __future__ import annotations

__all__ = ["ProducerError"]


class ProducerError(Exception):
    """The producer failed for a reason a retry will not fix (bad configuration or data).

    The operators turn it into ``AirflowFailException`` (no retry).
    """
