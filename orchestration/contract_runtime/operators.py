"""Operators used by the DAG modules that contract-assets generates.

Each data contract compiles to a DAG whose tasks are, in order, a
:class:`ProduceOperator`, an :class:`AuditOperator` and a
:class:`PublishOperator`. Every operator is told which contract it serves
(``contract_id``) and where the compiled contract manifest lives
(``manifest_path``).

The runtime behaviour is not written yet. Until it is, ``execute`` raises
:class:`NotImplementedError`, so a generated task fails loudly when it runs
instead of succeeding without doing anything.

This module imports nothing at import time beyond :mod:`airflow.sdk`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["AuditOperator", "ProduceOperator", "PublishOperator"]


class _ContractOperator(BaseOperator):
    """Common base of the contract operators: holds the contract id and manifest path.

    :param contract_id: Identifier of the data contract this task serves.
    :param manifest_path: Path of the compiled contract manifest the task reads.
    :param kwargs: Passed on unchanged to :class:`airflow.sdk.BaseOperator`
        (``task_id``, ``inlets``, ``outlets``, ``retries``, ...).
    """

    #: Name of the contract stage the operator implements; used in messages.
    stage: ClassVar[str] = "contract"

    def __init__(self, *, contract_id: str, manifest_path: str, **kwargs: Any) -> None:
        """Store the contract id and manifest path, forward the rest to BaseOperator."""
        super().__init__(**kwargs)
        self.contract_id: str = contract_id
        self.manifest_path: str = manifest_path

    def execute(self, context: Context) -> Any:
        """Fail the task: the contract runtime for this stage is not implemented yet.

        :param context: The Airflow task context (unused).
        :raises NotImplementedError: Always.
        """
        raise NotImplementedError(
            f"contract_runtime {type(self).__name__} ({self.stage} stage) is not implemented yet: "
            f"task {self.task_id!r} for contract {self.contract_id!r} "
            f"(manifest {self.manifest_path!r}) fails on purpose instead of passing silently"
        )


class ProduceOperator(_ContractOperator):
    """Produce the contract's dataset (write the output the contract describes).

    :param contract_id: Identifier of the data contract this task serves.
    :param manifest_path: Path of the compiled contract manifest the task reads.
    :param kwargs: Passed on unchanged to :class:`airflow.sdk.BaseOperator`.
    """

    stage: ClassVar[str] = "produce"


class AuditOperator(_ContractOperator):
    """Audit the produced dataset against the contract's schema and quality rules.

    :param contract_id: Identifier of the data contract this task serves.
    :param manifest_path: Path of the compiled contract manifest the task reads.
    :param kwargs: Passed on unchanged to :class:`airflow.sdk.BaseOperator`.
    """

    stage: ClassVar[str] = "audit"


class PublishOperator(_ContractOperator):
    """Publish the audited dataset, which updates the contract's Airflow Asset.

    :param contract_id: Identifier of the data contract this task serves.
    :param manifest_path: Path of the compiled contract manifest the task reads.
    :param kwargs: Passed on unchanged to :class:`airflow.sdk.BaseOperator`.
    """

    stage: ClassVar[str] = "publish"
