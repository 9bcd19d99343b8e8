"""Build the RunEvents of one contract DAG run (pure: no I/O, no emission).

A DAG run is one OpenLineage run of the job ``<lineage namespace>.<domain>`` / ``<contract id>``:

=========  =====================  ==================================================================
event      sent by                datasets
=========  =====================  ==================================================================
START      ``produce``, 1st try   none
OTHER      ``audit``              the tested dataset as input, ``dataQualityAssertions`` in its
                                  ``inputFacets``
COMPLETE   ``publish``            inputs: the DAG's inlets (an ingestion source with
                                  ``inputStatistics`` and ``contractAssets_files``); outputs: each
                                  published dataset with ``schema``, ``outputStatistics``,
                                  ``symlinks`` (an extract's landing files: ``contractAssets_files``)
FAIL       final failure of any   none: nothing was published (the OTHER event already named the
           task                   failing rules)
=========  =====================  ==================================================================

Every event carries the same job facets (``jobType``, ``ownership``, ``documentation``,
``contractAssets_processing``) and run facets (``contractAssets_provenance``, ``parent``); FAIL
adds ``errorMessage``. Event times are ``now`` in UTC, ISO 8601 with offset.

A run of a partitioned contract (``runtime.partitioning``, ADR 0028) also carries, on every event
(START, OTHER, COMPLETE, FAIL, ABORT), the run facet ``contractAssets_partition`` (key, grain,
column, UTC bounds: :func:`~contract_runtime.lineage.facets.partition_facet`), and the official
``subset`` facet with a partition condition naming its key on the OTHER event's tested dataset
(``inputFacets``) and on each COMPLETE output published to its target (``outputFacets``; a
quarantined output is the run's own table, not a partition of the dataset, and gets none). The
partition is read from the run (``run.partition_key``) and the manifest entry, like the stages
read it; a run whose key is missing or not a key of the grain has no partition, so its FAIL
event carries none and is still sent. A contract that is not partitioned gets neither facet:
its events are what they were before partitions existed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from openlineage.client.event_v2 import (
    InputDataset,
    Job,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
)
from openlineage.client.facet_v2 import JobFacet, RunFacet

from contract_runtime.lineage import facets as F
from contract_runtime.lineage.identity import (
    asset_symlink,
    dataset_identity,
    upstream_identity,
    uri_identity,
)
from contract_runtime.lineage.runid import (
    RunIdentityLike,
    contract_run_id,
    dag_run_id,
    provider_namespace,
)
from contract_runtime.partitions import Partition, PartitionKeyError, partition_of

__all__ = [
    "assertions_event",
    "complete_event",
    "fail_event",
    "freshness_end_event",
    "freshness_start_event",
    "job_name",
    "job_namespace",
    "resolve_git_commit",
    "run_partition",
    "skip_event",
    "start_event",
]

#: Keys of an output dict (or of a dataset dict merged by the caller) that describe the warehouse.
WAREHOUSE_KEYS: tuple[str, ...] = ("warehouse_namespace", "warehouse_database")


def job_namespace(manifest: Mapping[str, Any], dag: Mapping[str, Any]) -> str:
    """``<lineage namespace>.<domain>``: the OpenLineage job namespace of a contract."""
    return f"{manifest['lineage']['namespace']}.{dag['runtime']['domain']}"


def job_name(dag: Mapping[str, Any]) -> str:
    """The contract id (equal to the dag_id): the OpenLineage job name."""
    return str(dag["dag_id"])


def resolve_git_commit(run: object) -> tuple[str, str] | None:
    """The deployed commit and where it came from, or None when unknown.

    Order: ``run.bundle_version`` (``RunIdentity`` reads the running task's DAG bundle version,
    Airflow 3 ``ti.bundle_instance.version``; a Git bundle's version is the commit id); else env
    ``CONTRACT_ASSETS_GIT_COMMIT``, then ``GIT_COMMIT``. Only values that look like a commit id (7
    to 64 lower-case hex digits) count: the local ``dags-folder`` bundle has no version.

    :param run: The run identity.
    :returns: ``(commit, "dag_bundle" | "env")`` or None.
    """
    bundle_version = getattr(run, "bundle_version", None)
    if F.is_commit(bundle_version):
        return str(bundle_version), "dag_bundle"
    for variable in ("CONTRACT_ASSETS_GIT_COMMIT", "GIT_COMMIT"):
        value = os.environ.get(variable, "").strip().lower()
        if F.is_commit(value):
            return value, "env"
    return None


def run_partition(dag: Mapping[str, Any], run: object) -> Partition | None:
    """The partition the run works on, or None: the contract is not partitioned, or the run has
    no valid key (``run.partition_key`` missing, or not a key of the grain).

    Never raises: a bad key fails the run in ``produce`` (:class:`PartitionKeyError`), and that
    run's FAIL event must still be built, without a partition it does not have.
    """
    try:
        return partition_of(dag, getattr(run, "partition_key", None))
    except PartitionKeyError:
        return None


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _job(manifest: Mapping[str, Any], dag: Mapping[str, Any]) -> Job:
    job_facets: dict[str, JobFacet] = {"jobType": F.job_type_facet()}
    for key, facet in (
        ("ownership", F.ownership_facet(dag)),
        ("documentation", F.documentation_facet(dag)),
        ("contractAssets_processing", F.processing_facet(dag)),
    ):
        if facet is not None:
            job_facets[key] = facet
    return Job(
        namespace=job_namespace(manifest, dag), name=job_name(dag), facets=job_facets
    )


def _run(
    manifest: Mapping[str, Any],
    dag: Mapping[str, Any],
    run: RunIdentityLike,
    extra: Mapping[str, RunFacet] | None = None,
) -> Run:
    run_facets: dict[str, RunFacet] = {
        "contractAssets_provenance": F.provenance_facet(
            manifest, dag, resolve_git_commit(run), run
        ),
        "parent": F.parent_facet(provider_namespace(), str(dag["dag_id"]), dag_run_id(run)),
    }
    partition = run_partition(dag, run)
    if partition is not None:
        run_facets["contractAssets_partition"] = F.partition_facet(partition)
    run_id = contract_run_id(run, str(dag["dag_id"]))
    run_facets.update(extra or {})
    return Run(runId=run_id, facets=run_facets)


def _event(
    event_type: RunState,
    manifest: Mapping[str, Any],
    dag: Mapping[str, Any],
    run: RunIdentityLike,
    *,
    run_facets: Mapping[str, RunFacet] | None = None,
    inputs: Sequence[InputDataset] = (),
    outputs: Sequence[OutputDataset] = (),
    event_time: str | None = None,
) -> RunEvent:
    return RunEvent(
        eventType=event_type,
        eventTime=event_time or _now(),
        run=_run(manifest, dag, run, run_facets),
        job=_job(manifest, dag),
        inputs=list(inputs),
        outputs=list(outputs),
        producer=F.PRODUCER,
    )


def start_event(
    manifest: Mapping[str, Any],
    dag: Mapping[str, Any],
    run: RunIdentityLike,
    *,
    event_time: str | None = None,
) -> RunEvent:
    """The START event of the DAG run (sent when ``produce`` starts its first try)."""
    return _event(RunState.START, manifest, dag, run, event_time=event_time)


def assertions_event(
    manifest: Mapping[str, Any],
    dag: Mapping[str, Any],
    run: RunIdentityLike,
    dataset: Mapping[str, Any],
    results: Sequence[Mapping[str, Any]],
    *,
    event_time: str | None = None,
) -> RunEvent:
    """The OTHER event carrying the audit's assertion results on the tested dataset.

    :param dataset: The tested dataset's manifest entry; the caller may merge ``table``,
        ``warehouse_namespace`` and ``warehouse_database`` into it so the identity matches the
        COMPLETE event's output (see :func:`~contract_runtime.lineage.identity.dataset_identity`).
    :param results: One result per evaluated rule (see :func:`~contract_runtime.lineage.facets.assertions_facet`).
    :returns: The event; a partitioned run's tested dataset also has the ``subset`` input facet
        naming the partition tested (:func:`~contract_runtime.lineage.facets.partition_subset_input_facet`).
    """
    lineage_namespace = str(manifest["lineage"]["namespace"])
    namespace, name = dataset_identity(lineage_namespace, dataset)
    input_facets: dict[str, Any] = {
        "dataQualityAssertions": F.assertions_facet(results, dataset.get("quality", []))
    }
    partition = run_partition(dag, run)
    if partition is not None:
        input_facets["subset"] = F.partition_subset_input_facet(partition)
    tested = InputDataset(
        namespace=namespace,
        name=name,
        facets={
            "symlinks": F.symlinks_facet(
                [
                    asset_symlink(
                        lineage_namespace, str(dataset["asset"]), dataset.get("uri")
                    )
                ]
            )
        },
        inputFacets=input_facets,
    )
    return _event(
        RunState.OTHER, manifest, dag, run, inputs=[tested], event_time=event_time
    )


def complete_event(
    manifest: Mapping[str, Any],
    dag: Mapping[str, Any],
    run: RunIdentityLike,
    outputs: Sequence[Mapping[str, Any]],
    *,
    event_time: str | None = None,
) -> RunEvent:
    """The COMPLETE event (sent by ``publish``): what the run read and what it published.

    :param outputs: One per published dataset: ``{dataset, asset, table, row_count, columns,
        quality_status, quarantined}`` and optionally ``warehouse_namespace`` /
        ``warehouse_database``. A quarantined output is identified by the ``table`` it went to and
        gets no Asset symlink: the Asset was not updated.
    :returns: The event; in a partitioned run each output published to its target also has the
        ``subset`` output facet naming the partition it replaced
        (:func:`~contract_runtime.lineage.facets.partition_subset_output_facet`), a quarantined
        one none (its table is the run's own, not a partition of the dataset).
    """
    lineage_namespace = str(manifest["lineage"]["namespace"])
    declared = {str(d["asset"]): d for d in dag.get("runtime", {}).get("datasets", [])}
    warehouse = {
        key: outputs[0][key]
        for key in WAREHOUSE_KEYS
        if outputs and outputs[0].get(key)
    }
    partition = run_partition(dag, run)
    output_datasets = []
    for output in outputs:
        entry = declared.get(str(output["asset"]), {})
        located: dict[str, Any] = {
            key: output[key]
            for key in (*WAREHOUSE_KEYS, "table", "asset")
            if output.get(key)
        }
        quarantined = bool(output.get("quarantined"))
        if not quarantined and entry.get("physical"):
            located["physical"] = entry["physical"]
        if not quarantined and entry.get("uri"):
            located["uri"] = entry["uri"]
        written = output.get("location") and uri_identity(str(output["location"]))
        namespace, name = written or dataset_identity(lineage_namespace, located)
        dataset_facets: dict[str, Any] = {
            "schema": F.schema_facet(output.get("columns") or [])
        }
        if not quarantined:
            dataset_facets["symlinks"] = F.symlinks_facet(
                [
                    asset_symlink(
                        lineage_namespace, str(output["asset"]), entry.get("uri")
                    )
                ]
            )
        output_facets = _output_facets(output)
        if partition is not None and not quarantined:
            output_facets["subset"] = F.partition_subset_output_facet(partition)
        output_datasets.append(
            OutputDataset(
                namespace=namespace,
                name=name,
                facets=dataset_facets,
                outputFacets=output_facets,
            )
        )
    assets = {str(a["name"]): a for a in manifest.get("assets", [])}
    input_datasets = []
    read = {
        str(o["source"]["asset"]): o["source"]
        for o in outputs
        if isinstance(o.get("source"), Mapping)
    }
    for asset_name in dag.get("inlets", []):
        namespace, name = upstream_identity(manifest, str(asset_name), warehouse)
        source = read.get(str(asset_name))
        if source and source.get("location"):
            namespace, name = uri_identity(str(source["location"])) or (namespace, name)
        uri = assets.get(str(asset_name), {}).get("uri")
        input_datasets.append(
            InputDataset(
                namespace=namespace,
                name=name,
                facets={
                    "symlinks": F.symlinks_facet(
                        [asset_symlink(lineage_namespace, str(asset_name), uri)]
                    )
                },
                # the client's default {} would be serialised as an empty map
                inputFacets=_input_facets(source) if source else None,
            )
        )
    return _event(
        RunState.COMPLETE,
        manifest,
        dag,
        run,
        inputs=input_datasets,
        outputs=output_datasets,
        event_time=event_time,
    )


def skip_event(
    manifest: Mapping[str, Any],
    dag: Mapping[str, Any],
    run: RunIdentityLike,
    reason: str,
    unmet: Sequence[Mapping[str, Any]],
    *,
    event_time: str | None = None,
) -> RunEvent:
    """The ABORT event of a run skipped by ``require: passed`` (terminal: the run stopped before
    producing anything), with ``contractAssets_skip`` saying why."""
    return _event(
        RunState.ABORT,
        manifest,
        dag,
        run,
        run_facets={"contractAssets_skip": F.ContractAssetsSkipRunFacet(reason=reason, unmet=[dict(u) for u in unmet], producer=F.PRODUCER)},
        event_time=event_time,
    )


def _output_facets(output: Mapping[str, Any]) -> dict[str, Any]:
    """``outputStatistics`` (rows; bytes and files for an extract) and an extract's file list."""
    files = output.get("files")
    if not isinstance(files, list):
        return {"outputStatistics": F.output_statistics_facet(int(output["row_count"]))}
    return {
        "outputStatistics": F.output_statistics_facet(
            int(output["row_count"]), int(output.get("size_bytes") or 0), len(files)
        ),
        "contractAssets_files": F.files_output_facet(files, output.get("manifest_uri")),
    }


def _input_facets(source: Mapping[str, Any]) -> dict[str, Any]:
    """``inputStatistics`` and ``contractAssets_files`` of what an ingestion run read."""
    files = list(source.get("files") or [])
    if not files:  # a database table: rows only
        return {"inputStatistics": F.input_statistics_facet(int(source.get("rows") or 0))}
    return {
        "inputStatistics": F.input_statistics_facet(
            int(source.get("rows") or 0), sum(int(f["size"]) for f in files), len(files)
        ),
        "contractAssets_files": F.files_input_facet(files),
    }


def fail_event(
    manifest: Mapping[str, Any],
    dag: Mapping[str, Any],
    run: RunIdentityLike,
    error: BaseException,
    task_id: str,
    *,
    event_time: str | None = None,
) -> RunEvent:
    """The FAIL event (sent on the final failure of any task): ``errorMessage``, no datasets."""
    return _event(
        RunState.FAIL,
        manifest,
        dag,
        run,
        run_facets={"errorMessage": F.error_message_facet(error, task_id)},
        event_time=event_time,
    )


def _freshness_input(
    manifest: Mapping[str, Any], entry: Mapping[str, Any], policy: Mapping[str, Any], warehouse: Mapping[str, Any]
) -> InputDataset:
    """One monitored asset as the monitor run's input, with its ``freshness`` assertion."""
    lineage_namespace = str(manifest["lineage"]["namespace"])
    asset_name = str(entry["asset"])
    namespace, name = upstream_identity(manifest, asset_name, warehouse)
    state = str(entry["state"])
    assertion = {
        "name": "freshness",
        "metric": "freshness",
        "column": None,
        "severity": "error" if state == "degraded" else "warning",
        "operator": "mustBeLessOrEqualTo",
        "expected": policy.get("max_age_seconds"),
        "actual": entry.get("age_seconds"),
        "success": state in ("fresh", "recovered"),
    }
    results = [assertion]
    partitions = entry.get("partitions")
    if partitions is not None:
        # a partitioned asset's gaps as an assertion of their own: they never change the state
        results.append(
            {
                "name": "missing_partitions",
                "metric": "missingPartitions",
                "column": None,
                "severity": "warning",
                "operator": "mustBe",
                "expected": 0,
                "actual": partitions["missing_count"],
                "success": partitions["missing_count"] == 0,
            }
        )
    facet = F.assertions_facet(results, [])
    for a in facet.assertions:
        a.params = {
            **(a.params or {}),
            "state": state,
            "previous_state": entry.get("previous_state"),
            "max_age": policy.get("max_age"),
            "degrade_after": policy.get("degrade_after"),
            "last_event_at": entry.get("last_event_at"),
        }
        if partitions is not None:
            a.params.update(
                {
                    "partition_grain": partitions["grain"],
                    "first_partition": partitions["first"],
                    "newest_partition": partitions["newest"],
                    "newest_partition_end": partitions["newest_end"],
                    "published_partitions": partitions["published"],
                    "missing_partitions": list(partitions["missing"]),
                    "missing_partitions_count": partitions["missing_count"],
                }
            )
    return InputDataset(
        namespace=namespace,
        name=name,
        facets={
            "symlinks": F.symlinks_facet(
                [asset_symlink(lineage_namespace, asset_name, policy.get("uri"))]
            )
        },
        inputFacets={"dataQualityAssertions": facet},
    )


def _freshness_event(
    event_type: RunState,
    manifest: Mapping[str, Any],
    monitor: Mapping[str, Any],
    run: RunIdentityLike,
    *,
    inputs: Sequence[InputDataset] = (),
    run_facets: Mapping[str, RunFacet] | None = None,
    event_time: str | None = None,
) -> RunEvent:
    job = Job(
        namespace=str(manifest["lineage"]["namespace"]),
        name=str(monitor["dag_id"]),
        facets={"jobType": F.job_type_facet()},
    )
    # our monitor job's own run, a child of the DAG run (ADR 0010): a runId belongs to one job
    return RunEvent(
        eventType=event_type,
        eventTime=event_time or _now(),
        run=Run(
            runId=contract_run_id(run, str(monitor["dag_id"])),
            facets={
                "parent": F.parent_facet(provider_namespace(), str(monitor["dag_id"]), dag_run_id(run)),
                **(run_facets or {}),
            },
        ),
        job=job,
        inputs=list(inputs),
        outputs=[],
        producer=F.PRODUCER,
    )


def freshness_start_event(
    manifest: Mapping[str, Any],
    monitor: Mapping[str, Any],
    run: RunIdentityLike,
    *,
    event_time: str | None = None,
) -> RunEvent:
    """The START of one freshness monitor run (before any asset is evaluated).

    Job: ``<lineage namespace>`` / the monitor's dag_id; run: its own runId (:func:`contract_run_id`
    of the monitor's dag_id), whose ``parent`` and ``root`` are the monitor's DAG run. No datasets:
    what the run read is known at its end.
    """
    return _freshness_event(RunState.START, manifest, monitor, run, event_time=event_time)


def freshness_end_event(
    manifest: Mapping[str, Any],
    monitor: Mapping[str, Any],
    run: RunIdentityLike,
    entries: Sequence[Mapping[str, Any]],
    warehouse: Mapping[str, Any],
    error: BaseException | None = None,
    *,
    event_time: str | None = None,
) -> RunEvent:
    """The terminal event of one freshness monitor run: COMPLETE, or FAIL with ``errorMessage``
    when the monitor task fails (a notifier refused an alert, the warehouse did not answer).

    Every evaluated asset is an input, identified as every other event identifies it (physical
    location, Asset symlink), with one ``dataQualityAssertions`` assertion ``freshness``
    (``dataQualityAssertions`` is an input dataset facet, allowed on any run event of the spec):
    ``success`` when the state is ``fresh`` or ``recovered``, ``expected`` the policy (``<=
    max_age``), ``actual`` the age in seconds (None when never published), ``severity`` ``error``
    once degraded, else ``warning``. A stale asset is a failed assertion of a run that completed.
    A partitioned asset's ``actual`` is its newest partition's age, and it has a second assertion,
    ``missing_partitions`` (``mustBe`` 0, ``actual`` the count of missing keys, ``warning``); both
    carry the partitions in ``params`` (``partition_grain``, ``first_partition``,
    ``newest_partition``, ``newest_partition_end``, ``published_partitions``,
    ``missing_partitions`` (the listed keys), ``missing_partitions_count``).

    :param entries: The results of :func:`contract_runtime.freshness.evaluate_assets` (none when
        the run failed before evaluating).
    :param warehouse: ``warehouse_namespace`` / ``warehouse_database`` of the warehouse the
        producers write (see :func:`~contract_runtime.stages.lineage_warehouse`).
    :param error: The exception that failed the monitor task, or None.
    """
    policies = {str(a["name"]): a for a in monitor.get("assets", [])}
    inputs = [_freshness_input(manifest, e, policies.get(str(e["asset"]), {}), warehouse) for e in entries]
    if error is None:
        return _freshness_event(RunState.COMPLETE, manifest, monitor, run, inputs=inputs, event_time=event_time)
    facets: dict[str, RunFacet] = {"errorMessage": F.error_message_facet(error, _task_id(run))}
    return _freshness_event(
        RunState.FAIL, manifest, monitor, run, inputs=inputs, run_facets=facets, event_time=event_time
    )


def _task_id(run: RunIdentityLike) -> str:
    return str(getattr(run, "task_id", "") or "evaluate")
