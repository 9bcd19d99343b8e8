"""The OpenLineage runIds of a contract run and of the Airflow DAG run it nests under.

One pipeline run is one Airflow DAG run (DESIGN §6.1, ADR 0010): our contract job's run is a
child of the DAG run. Its runId (:func:`contract_run_id`) is deterministic, derived from the DAG
run's runId as the Airflow OpenLineage provider gives it (:func:`dag_run_id`) and the contract
id, so every task and every retry of the DAG run keys its events to it, and every runId belongs
to exactly one job: the provider's DAG-run events keep the DAG run's runId, ours keep ours, and
our ``parent``/``root`` facets name the provider's DAG run.

How the provider (apache-airflow-providers-openlineage 2.20.x) derives it, read from its source:

* ``OpenLineageAdapter.build_dag_run_id(dag_id, logical_date, clear_number)`` calls
  ``utils.build_dag_run_ol_run_id``, which returns
  ``str(generate_static_uuid(instant=logical_date, data=f"{namespace}.{dag_id}.{clear_number}"))``;
* ``namespace`` is the provider's ``conf.namespace()``: Airflow config ``[openlineage] namespace``,
  else env ``OPENLINEAGE_NAMESPACE``, else ``"default"`` (not the contract lineage namespace);
* on Airflow 3 the listener passes ``dagrun.logical_date``, or ``dagrun.run_after`` when the
  logical date is None (asset-triggered and manual runs), and ``dagrun.clear_number`` (0 until the
  run is cleared; clearing starts a new OpenLineage run).

:func:`dag_run_id` calls the provider's function when the provider is loaded in the process (it is
whenever its listener is active, i.e. OpenLineage is configured for Airflow) and otherwise computes
the same value with ``openlineage.client.uuid.generate_static_uuid`` (a UUIDv7 whose time part is
the instant and whose other bits are a SHA-1 of the instant and the data). It does not import the
provider just for the id: that import costs about 1.7 s in a task process and 6 s in a cold one
(measured with the lock), which would eat the emit timeout and lose the START event. The tests
assert that both paths give the provider's value, so a provider upgrade that changes the formula
fails them.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from typing import Any, Protocol

__all__ = ["RunIdentityLike", "contract_run_id", "dag_run_id", "dag_run_instant", "provider_namespace"]


class RunIdentityLike(Protocol):
    """What the emit hook reads from ``contract_runtime.run.RunIdentity``.

    ``RunIdentity`` also carries ``clear_number`` (from ``dag_run.clear_number``) and
    ``bundle_version`` (the DAG bundle version); the hook reads both with ``getattr`` and
    defaults 0 / None, so a hand-made identity without them still works.
    """

    @property
    def dag_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def logical_date(self) -> datetime | None: ...
    @property
    def run_after(self) -> datetime: ...
    @property
    def try_number(self) -> int: ...
    @property
    def max_tries(self) -> int: ...
    @property
    def task_id(self) -> str: ...
    @property
    def map_index(self) -> int: ...


def dag_run_instant(run: RunIdentityLike) -> datetime:
    """The instant the provider keys a DAG run's id on: logical date, else ``run_after``.

    :param run: The run identity.
    :returns: A timezone-aware datetime (a naive one is taken as UTC, as Airflow stores UTC).
    """
    instant = run.logical_date if run.logical_date is not None else run.run_after
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return instant


def clear_number_of(run: Any) -> int:
    """The DAG run's clear number when the identity carries it, else 0."""
    value = getattr(run, "clear_number", 0)
    return int(value) if isinstance(value, int) else 0


#: The provider modules whose functions are reused when they are already loaded.
PROVIDER_ADAPTER_MODULE = "airflow.providers.openlineage.plugins.adapter"
PROVIDER_CONF_MODULE = "airflow.providers.openlineage.conf"


#: The Task SDK's configuration module: what the provider's ``conf`` is on Airflow 3
#: (``airflow.providers.common.compat.sdk`` maps ``conf`` to ``airflow.sdk.configuration.conf``).
#: A task reads no other Airflow configuration: ``airflow.configuration`` is the core's, which a
#: worker of Airflow 3 need not have (issue 36; test_task_sdk_only.py).
SDK_CONFIGURATION_MODULE = "airflow.sdk.configuration"


def provider_namespace() -> str:
    """The namespace the Airflow OpenLineage provider puts into DAG-run ids and parent jobs.

    :returns: The provider's ``conf.namespace()`` when the provider is loaded; else the same
        rule: Airflow's ``[openlineage] namespace`` (from the Task SDK's configuration when it is
        loaded, else env ``AIRFLOW__OPENLINEAGE__NAMESPACE``), else ``OPENLINEAGE_NAMESPACE``,
        else ``"default"``.
    """
    provider_conf = sys.modules.get(PROVIDER_CONF_MODULE)
    if provider_conf is not None:
        return str(provider_conf.namespace())
    return _fallback_provider_namespace()


def _fallback_provider_namespace() -> str:
    """The provider's namespace rule without the provider (Task SDK config, env, ``default``).

    Only a configuration module already loaded is read (a task process has loaded the Task
    SDK's); loading one here would cost seconds inside the emit bound (see the module doc).
    """
    configuration = sys.modules.get(SDK_CONFIGURATION_MODULE)
    if configuration is not None:
        option = configuration.conf.get("openlineage", "namespace", fallback="") or ""
    else:
        option = os.getenv("AIRFLOW__OPENLINEAGE__NAMESPACE", "")
    return option or os.getenv("OPENLINEAGE_NAMESPACE", "default")


def dag_run_id(run: RunIdentityLike) -> str:
    """Deterministic OpenLineage runId of the DAG run ``run`` belongs to.

    The same for every task, try and map index of the run; equal to the Airflow OpenLineage
    provider's DAG-run runId.

    :param run: The run identity (``dag_id``, ``logical_date``, ``run_after``; optionally
        ``clear_number``).
    :returns: A UUID string.
    """
    instant = dag_run_instant(run)
    clear_number = clear_number_of(run)
    adapter = sys.modules.get(PROVIDER_ADAPTER_MODULE)
    if adapter is None:
        return fallback_dag_run_id(run.dag_id, instant, clear_number)
    return str(
        adapter.OpenLineageAdapter.build_dag_run_id(
            dag_id=run.dag_id, logical_date=instant, clear_number=clear_number
        )
    )


def fallback_dag_run_id(
    dag_id: str, instant: datetime, clear_number: int, namespace: str | None = None
) -> str:
    """The provider's DAG-run id formula, computed without the provider.

    :param dag_id: The DAG id.
    :param instant: Logical date, else run_after (timezone-aware).
    :param clear_number: The DAG run's clear number.
    :param namespace: The provider namespace; default :func:`provider_namespace` rules.
    :returns: A UUID string.
    """
    from openlineage.client.uuid import generate_static_uuid

    ns = namespace if namespace is not None else _fallback_provider_namespace()
    return str(
        generate_static_uuid(
            instant=instant, data=f"{ns}.{dag_id}.{clear_number}".encode()
        )
    )


def contract_run_id(run: RunIdentityLike, contract_id: str | None = None) -> str:
    """Deterministic OpenLineage runId of our contract job's run inside the DAG run ``run``.

    ``generate_static_uuid(instant, f"{dag_run_id(run)}.{contract_id}")``: a UUIDv7 with the
    DAG run's instant (logical date, else ``run_after``) as its time part, so it sorts with the
    provider's ids, and the SHA-1 of the DAG run's runId and the contract id as the rest. The same
    for every task, try and map index of the run; a cleared DAG run (new ``clear_number``, new
    DAG-run runId) gets a new one.

    :param run: The run identity.
    :param contract_id: The contract id (default ``run.dag_id``: a generated DAG's id is its
        contract id).
    :returns: A UUID string, never equal to :func:`dag_run_id` of the same run.
    """
    from openlineage.client.uuid import generate_static_uuid

    contract = contract_id if contract_id is not None else run.dag_id
    return str(generate_static_uuid(instant=dag_run_instant(run), data=f"{dag_run_id(run)}.{contract}".encode()))
