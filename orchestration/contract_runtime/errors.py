"""The runtime's exception classes that more than one layer raises.

Kept in a module of its own at the bottom of the runtime's layers (ARCHITECTURE.md, Layering), so
a service such as :mod:`contract_runtime.objectstore` can raise what a producer raises without
importing the producers that call it.
"""

from __future__ import annotations

from contract_runtime.redact import mask_uri_credentials

__all__ = ["ProducerError"]


class ProducerError(Exception):
    """The producer failed for a reason a retry will not fix (bad configuration or data).

    The operators turn it into ``AirflowFailException`` (no retry). The message is stored with
    the credentials of any URI it quotes masked
    (:func:`contract_runtime.redact.mask_uri_credentials`: user info, a signed URL's
    signature), so neither the task log, its traceback nor a lineage facet carries them.
    """

    def __init__(self, message: str) -> None:
        """:param message: What failed, naming the contract; URI credentials are masked here."""
        super().__init__(mask_uri_credentials(str(message)))
