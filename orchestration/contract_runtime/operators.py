"""Operators used by the DAG modules that contract-assets generates.

Each data contract compiles to a DAG whose tasks are, in order, a :class:`ProduceOperator`, an
:class:`AuditOperator` and a :class:`PublishOperator` (write-audit-publish, DESIGN §5.2). Every
operator is told which contract it serves (``contract_id``) and where the compiled manifest lives
(``manifest_path``); it reads the manifest at task time (ADR 0002) and delegates to
:mod:`contract_runtime.stages`.

- ``produce`` runs the producer into staging tables; XCom: ``{"staging", "producer",
  "clear_number"}``. Whichever task runs first in a cleared DAG run sends its START
  (:func:`contract_runtime.stages.start_if_run_is_new`).
- ``audit`` evaluates the quality rules; pushes the verdict to XCom under the key ``quality``
  (also on failure). A blocking failure raises ``AirflowFailException`` (never retried).
- ``publish`` (the only task with outlets) swaps staging into the targets in one transaction and
  sets each outlet's Asset event ``extra`` to ``{"row_count", "quality_status", "failed_rules",
  "contract_id", "contract_version", "openlineage": {"parentJobNamespace", "parentJobName",
  "parentRunId"}}`` (our contract run's lineage identity, ADR 0010).

Failures that a retry cannot fix (configuration, data, quality gate) raise
``AirflowFailException``; others propagate so the task's retries apply. Every operator gets an
``on_failure_callback`` (Airflow calls it on the final failure only, ``on_retry_callback`` on a
retry) that emits lineage FAIL, unless the DAG or task gives its own.

This module imports nothing at import time beyond :mod:`airflow.sdk` and the standard library:
DuckDB, database drivers and the runtime modules are imported inside ``execute``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar, cast

from airflow.sdk import BaseOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

    from contract_runtime.run import RunIdentity

__all__ = ["AuditOperator", "ProduceOperator", "PublishOperator", "lineage_on_failure"]

log = logging.getLogger(__name__)

#: XCom key of the audit verdict.
QUALITY_XCOM_KEY: str = "quality"


def lineage_on_failure(context: Context) -> None:
    """``on_failure_callback`` of the contract operators: emit lineage FAIL. Never raises.

    The error is ``context["exception"]`` when Airflow provides it, else the exception the
    operator recorded while executing (``dag.test()`` runs callbacks without it).
    """
    try:
        from contract_runtime.run import RunIdentity
        from contract_runtime.stages import lineage_fail

        # One of this module's operators (the callback is set only on them), with their fields.
        task: Any = context["task"]
        error = context.get("exception") or getattr(task, "_ca_error", None)
        if error is None:
            error = RuntimeError(f"task {getattr(task, 'task_id', '?')} failed")
        if isinstance(error, str):
            error = RuntimeError(error)
        run = RunIdentity.from_context(context)
        lineage_fail(task.manifest_path, task.contract_id, run, error, run.task_id)
    except Exception as exc:  # noqa: BLE001 - a callback must never raise
        log.warning("lineage FAIL callback failed: %s: %s", type(exc).__name__, exc)


class _ContractOperator(BaseOperator):
    """Common base of the contract operators: holds the contract id and manifest path.

    :param contract_id: Identifier of the data contract this task serves.
    :param manifest_path: Path of the compiled contract manifest the task reads.
    :param on_failure_callback: Airflow's callback(s) on final failure; when neither the task
        nor the DAG's ``default_args`` give one, :func:`lineage_on_failure` is used.
    :param kwargs: Passed on unchanged to :class:`airflow.sdk.BaseOperator`
        (``task_id``, ``inlets``, ``outlets``, ``retries``, ...).
    """

    #: Name of the contract stage the operator implements; used in messages.
    stage: ClassVar[str] = "contract"

    def __init__(self, *, contract_id: str, manifest_path: str, on_failure_callback: Any = None, **kwargs: Any) -> None:
        """Store the contract id and manifest path, forward the rest to BaseOperator."""
        if on_failure_callback is None:
            on_failure_callback = lineage_on_failure
        super().__init__(on_failure_callback=on_failure_callback, **kwargs)
        self.contract_id: str = contract_id
        self.manifest_path: str = manifest_path

    def execute(self, context: Context) -> Any:
        """Run the stage; map non-retryable errors to ``AirflowFailException`` and a run that
        ``require: passed`` refuses to ``AirflowSkipException``.

        :raises AirflowFailException: For errors no retry can fix (the task fails at once).
        :raises AirflowSkipException: When the run is skipped (:class:`~contract_runtime.stages.RunSkipped`).
        """
        from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

        from contract_runtime.run import RunIdentity
        from contract_runtime.stages import RunSkipped, non_retryable_errors

        self._ca_error: BaseException | None = None
        run = RunIdentity.from_context(context)
        try:
            return self.run_stage(context, run)
        except RunSkipped as exc:
            raise AirflowSkipException(str(exc)) from exc
        except non_retryable_errors() as exc:
            self._ca_error = exc
            message = str(exc)
            # A task error names the contract (ARCHITECTURE.md, runtime errors).
            if self.contract_id not in message:
                message = f"contract {self.contract_id!r}: {message}"
            raise AirflowFailException(message) from exc
        except BaseException as exc:
            self._ca_error = exc
            raise

    def run_stage(self, context: Context, run: RunIdentity) -> Any:
        """The stage's work; subclasses implement it.

        :param context: The Airflow task context.
        :param run: The run identity built from it.
        :returns: The task's XCom return value (small, JSON-able).
        """
        raise NotImplementedError(f"{type(self).__name__} implements no stage")


class ProduceOperator(_ContractOperator):
    """Produce the contract's datasets into this run's staging tables.

    :param contract_id: Identifier of the data contract this task serves.
    :param manifest_path: Path of the compiled contract manifest the task reads.
    :param kwargs: Passed on unchanged to :class:`airflow.sdk.BaseOperator`.
    """

    stage: ClassVar[str] = "produce"

    def run_stage(self, context: Context, run: RunIdentity) -> Any:
        from contract_runtime import stages

        return stages.produce(self.manifest_path, self.contract_id, run)


class AuditOperator(_ContractOperator):
    """Audit the staging tables against the contract's quality rules and gate publishing.

    :param contract_id: Identifier of the data contract this task serves.
    :param manifest_path: Path of the compiled contract manifest the task reads.
    :param kwargs: Passed on unchanged to :class:`airflow.sdk.BaseOperator`.
    """

    stage: ClassVar[str] = "audit"

    def run_stage(self, context: Context, run: RunIdentity) -> Any:
        from contract_runtime import stages

        try:
            produced = context["ti"].xcom_pull(task_ids="produce")
            summary = stages.audit(
                self.manifest_path,
                self.contract_id,
                run,
                produced=produced if isinstance(produced, dict) else None,
            )
        except stages.QualityGateFailed as exc:
            context["ti"].xcom_push(key=QUALITY_XCOM_KEY, value=exc.summary)
            raise
        context["ti"].xcom_push(key=QUALITY_XCOM_KEY, value=summary)
        return {"status": summary["status"]}


class PublishOperator(_ContractOperator):
    """Publish the audited datasets and set the Asset events' ``extra``.

    :param contract_id: Identifier of the data contract this task serves.
    :param manifest_path: Path of the compiled contract manifest the task reads.
    :param audit_task_id: The task whose ``quality`` XCom holds the verdict (``audit``).
    :param kwargs: Passed on unchanged to :class:`airflow.sdk.BaseOperator`.
    """

    stage: ClassVar[str] = "publish"

    def __init__(self, *, audit_task_id: str = "audit", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.audit_task_id: str = audit_task_id

    def run_stage(self, context: Context, run: RunIdentity) -> Any:
        from contract_runtime import stages
        from contract_runtime.manifest import find_dag, load_manifest

        summary = context["ti"].xcom_pull(task_ids=self.audit_task_id, key=QUALITY_XCOM_KEY)
        outputs = stages.publish(self.manifest_path, self.contract_id, run, summary)
        manifest = load_manifest(self.manifest_path, self.contract_id)
        dag = find_dag(manifest, self.contract_id)
        by_name = {getattr(a, "name", None): a for a in (self.outlets or [])}
        events = context["outlet_events"]
        for out in outputs:
            asset = by_name.get(out["asset"])
            if asset is None:
                log.warning("publish: %s has no outlet Asset on this task; no event extra set", out["asset"])
                continue
            events[asset].extra = stages.asset_event_extra(out, cast("dict[str, Any]", dag), run, cast("dict[str, Any]", manifest))
        return [
            {k: out[k] for k in ("asset", "table", "row_count", "quality_status", "failed_rules")} for out in outputs
        ]
