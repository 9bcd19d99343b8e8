"""The facets contract-assets puts on its OpenLineage events (DESIGN §6.2).

Custom facets are attrs classes on the openlineage-python facet bases, so the client serialises
them like its own. Their JSON Schemas live in ``contract_runtime/facets/*.json`` and are laid out
like the official ones: a ``$defs`` entry per facet that extends the core ``RunFacet``/``JobFacet``
with ``allOf``, and a top-level ``properties`` entry naming the facet key. Each facet's
``_schemaURL`` is that schema's ``$id`` plus ``#/$defs/<FacetName>``; the ``$id`` lives under
:data:`SCHEMA_BASE_URL`, versioned like the official facets (``1-0-0``): a compatible change adds
optional fields under a new minor version, an incompatible one a new major.

Standard facets come from ``openlineage.client.facet_v2``; the builders here only map manifest and
run values onto them. Every facet carries :data:`PRODUCER` as ``_producer``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attr
from openlineage.client.facet_v2 import (
    InputDatasetFacet,
    JobFacet,
    OutputDatasetFacet,
    RunFacet,
    base_subset_dataset,
    data_quality_assertions_dataset,
    documentation_job,
    error_message_run,
    input_statistics_input_dataset,
    job_type_job,
    output_statistics_output_dataset,
    ownership_job,
    parent_run,
    schema_dataset,
    symlinks_dataset,
)

from contract_runtime import __version__
from contract_runtime.partitions import Partition
from contract_runtime.redact import mask_params, mask_text

__all__ = [
    "INTEGRATION",
    "PRODUCER",
    "SCHEMA_BASE_URL",
    "ContractAssetsFilesInputDatasetFacet",
    "ContractAssetsFilesOutputDatasetFacet",
    "ContractAssetsPartitionRunFacet",
    "ContractAssetsProcessingJobFacet",
    "ContractAssetsProvenanceRunFacet",
    "ContractAssetsShrinkRunFacet",
    "assertions_facet",
    "documentation_facet",
    "error_message_facet",
    "files_input_facet",
    "files_output_facet",
    "input_statistics_facet",
    "job_type_facet",
    "output_statistics_facet",
    "ownership_facet",
    "parent_facet",
    "partition_facet",
    "partition_subset_input_facet",
    "partition_subset_output_facet",
    "processing_facet",
    "provenance_facet",
    "schema_facet",
    "symlinks_facet",
]

#: Base URL of the custom facet schemas; the files themselves are in contract_runtime/facets/.
SCHEMA_BASE_URL: str = "https://contract-assets.dev/spec/facets/1-0-0/"
#: ``producer`` of every event and ``_producer`` of every facet this package emits.
PRODUCER: str = f"https://contract-assets.dev/contract-runtime/{__version__}"
#: ``jobType.integration``: the events come from contract-assets, not from the Airflow provider
#: (which emits its own ``AIRFLOW`` DAG and task jobs); consumers filtering by integration see
#: the contract jobs separately.
INTEGRATION: str = "CONTRACT_ASSETS"
#: Longest ``errorMessage.message`` (characters); the full text is in ``stackTrace``.
MAX_MESSAGE_CHARS: int = 4000
#: Git commit ids (abbreviated SHA-1 up to full SHA-256).
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")


def _schema_url(facet_name: str, kind: str) -> str:
    return f"{SCHEMA_BASE_URL}{facet_name}{kind}.json#/$defs/{facet_name}{kind}"


@attr.define
class ContractAssetsProvenanceRunFacet(RunFacet):
    """What produced the run: contract, versions, commit, parameters (schema in the repo)."""

    contract_id: str
    schema_versions: dict[str, int]
    upstream_schema_versions: dict[str, int]
    compiler: dict[str, str]
    runtime: dict[str, str]
    step_params: dict[str, Any]
    contract: str | None = attr.field(default=None)
    contract_sha256: str | None = attr.field(default=None)
    contract_version: str | None = attr.field(default=None)
    contract_git_blob: str | None = attr.field(default=None)
    manifest_version: int | None = attr.field(default=None)
    git_commit: str | None = attr.field(default=None)
    git_commit_source: str | None = attr.field(default=None)
    producer_ref: dict[str, str] | None = attr.field(default=None)
    dag_bundle: dict[str, Any] | None = attr.field(default=None)
    consumed_batches: list[dict[str, Any]] | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return _schema_url("ContractAssetsProvenance", "RunFacet")


@attr.define
class ContractAssetsPartitionRunFacet(RunFacet):
    """The partition a run of a partitioned contract works on (schema in the repo; ADR 0028)."""

    key: str
    grain: str
    column: str
    start: str
    end: str

    @staticmethod
    def _get_schema() -> str:
        return _schema_url("ContractAssetsPartition", "RunFacet")


@attr.define
class ContractAssetsProcessingJobFacet(JobFacet):
    """Purpose and legal basis of the processing the job performs (GDPR Art. 30)."""

    purpose: str
    legal_basis: str

    @staticmethod
    def _get_schema() -> str:
        return _schema_url("ContractAssetsProcessing", "JobFacet")


@attr.define
class ContractAssetsShrinkRunFacet(RunFacet):
    """What was truncated or dropped to bring an event under the size cap."""

    max_bytes: int
    original_bytes: int
    changes: list[dict[str, str]] = attr.field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return _schema_url("ContractAssetsShrink", "RunFacet")


@attr.define
class ContractAssetsSkipRunFacet(RunFacet):
    """Why a run was skipped: the ``require: passed`` upstreams whose triggering event it refused."""

    reason: str
    unmet: list[dict[str, Any]] = attr.field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return _schema_url("ContractAssetsSkip", "RunFacet")


def consumed_batches(run: object) -> list[dict[str, Any]]:
    """The upstream batches a run consumed: one per triggering Asset event (``run.triggering_events``
    of :class:`~contract_runtime.run.RunIdentity`), oldest first.

    Each is ``{"asset", "source_dag_id", "source_run_id", "timestamp", "runId", "quality_status"}``:
    ``runId`` is our runId of the run that published the batch, read from the event's
    ``extra.openlineage.parentRunId`` (None when the publisher wrote none, e.g. an external
    Asset), ``quality_status`` its ``extra.quality_status`` (None likewise). So a published number
    is traced back batch by batch: this run -> the batches -> the runs that published them.
    """
    batches = []
    for event in getattr(run, "triggering_events", ()) or ():
        extra = event.get("extra") or {}
        found = extra.get("openlineage")
        lineage: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        run_id = lineage.get("parentRunId")
        status = extra.get("quality_status")
        batches.append(
            {
                "asset": str(event.get("asset", "")),
                "source_dag_id": event.get("source_dag_id"),
                "source_run_id": event.get("source_run_id"),
                "timestamp": str(event.get("timestamp", "")),
                "runId": str(run_id) if isinstance(run_id, str) and _UUID.match(run_id) else None,
                "quality_status": str(status) if isinstance(status, str) else None,
            }
        )
    return batches


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def dag_bundle(run: object) -> dict[str, Any] | None:
    """The DAG bundle the run's task came from, as the Airflow OpenLineage provider reads it
    (``ti.bundle_instance``): ``{"name", "versioned": True, "version"}`` for a versioned bundle (a
    GitDagBundle's version is the commit), ``{"name", "versioned": False}`` for an unversioned one
    such as the local ``dags-folder`` (said explicitly, never guessed; ``versioned`` because the
    OpenLineage client drops null fields); None when Airflow did not say (``DAG.test()``)."""
    name = getattr(run, "bundle_name", None)
    if not name:
        return None
    version = getattr(run, "bundle_version", None)
    if version:
        return {"name": str(name), "versioned": True, "version": str(version)}
    return {"name": str(name), "versioned": False}


def _file_entries(files: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    entries = []
    for f in files:
        entry: dict[str, Any] = {"uri": str(f["uri"]), "size": int(f["size"])}
        if f.get("sha256"):
            entry["checksum"] = {"algorithm": "SHA-256", "value": str(f["sha256"])}
        if f.get("etag"):
            entry["etag"] = str(f["etag"])
        if f.get("rows") is not None:
            entry["rowCount"] = int(f["rows"])
        entries.append(entry)
    return entries


@attr.define
class ContractAssetsFilesInputDatasetFacet(InputDatasetFacet):
    """The objects an ingestion run read from its source: URI, size, checksum, ETag, rows (schema in the repo)."""

    files: list[dict[str, Any]] = attr.field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return _schema_url("ContractAssetsFiles", "InputDatasetFacet")


@attr.define
class ContractAssetsFilesOutputDatasetFacet(OutputDatasetFacet):
    """The objects an extract run wrote (its landing files and manifest), same fields as the input facet."""

    files: list[dict[str, Any]] = attr.field(factory=list)
    manifest: str | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return _schema_url("ContractAssetsFiles", "OutputDatasetFacet")


def files_input_facet(files: Sequence[Mapping[str, Any]]) -> ContractAssetsFilesInputDatasetFacet:
    """The ``contractAssets_files`` input facet from ``[{"uri", "size", "sha256", "etag", "rows"}]``."""
    return ContractAssetsFilesInputDatasetFacet(files=_file_entries(files), producer=PRODUCER)


def files_output_facet(
    files: Sequence[Mapping[str, Any]], manifest: str | None
) -> ContractAssetsFilesOutputDatasetFacet:
    """The ``contractAssets_files`` output facet: the files written and the manifest object's URI."""
    return ContractAssetsFilesOutputDatasetFacet(files=_file_entries(files), manifest=manifest, producer=PRODUCER)


def input_statistics_facet(
    row_count: int, size: int | None = None, file_count: int | None = None
) -> input_statistics_input_dataset.InputStatisticsInputDatasetFacet:
    """The ``inputStatistics`` input facet: rows, bytes and files read."""
    return input_statistics_input_dataset.InputStatisticsInputDatasetFacet(
        rowCount=int(row_count), size=size, fileCount=file_count, producer=PRODUCER
    )


def provenance_facet(
    manifest: Mapping[str, Any],
    dag: Mapping[str, Any],
    git_commit: tuple[str, str] | None,
    run: object = None,
) -> ContractAssetsProvenanceRunFacet:
    """The ``contractAssets_provenance`` run facet, forwarded from the manifest.

    :param manifest: The compiled manifest (``manifestVersion``, ``compiler``).
    :param dag: The manifest's ``dags[]`` entry.
    :param git_commit: ``(commit, source)`` from :func:`resolve_git_commit`, or None.
    :param run: The run identity: its DAG bundle (:func:`dag_bundle`) and the upstream batches it
        consumed (:func:`consumed_batches`).
    :returns: The facet; producer params masked (:func:`~contract_runtime.redact.mask_params`).
        A compiled manifest always has the contract path, hashes and version; a field missing from
        a hand-made manifest is left out rather than costing the whole event.
    """
    runtime = dag.get("runtime", {})
    producer = runtime.get("producer", {}) or {}
    compiler = manifest.get("compiler", {}) or {}
    producer_ref = {
        key: " ".join(map(str, producer[key])) if isinstance(producer[key], list) else str(producer[key])
        for key in ("type", "entrypoint", "path", "family", "project", "select")
        if producer.get(key)
    }
    return ContractAssetsProvenanceRunFacet(
        contract_id=str(dag["dag_id"]),
        contract=_optional_text(dag.get("contract")),
        contract_sha256=_optional_text(dag.get("contract_sha256")),
        contract_git_blob=_optional_text(dag.get("contract_git_blob")),
        contract_version=_optional_text(dag.get("contract_version")),
        manifest_version=manifest.get("manifestVersion")
        if isinstance(manifest.get("manifestVersion"), int)
        else None,
        schema_versions={
            str(d["asset"]): int(d["schema"]["version"])
            for d in runtime.get("datasets", [])
            if d.get("schema")
        },
        upstream_schema_versions={
            str(u["asset"]): int(u["schema_version"])
            for u in runtime.get("upstreams", [])
            if u.get("schema_version") is not None
        },
        compiler={
            "name": str(compiler.get("name", "contract-assets")),
            "version": str(compiler.get("version", "")),
        },
        runtime={"name": "contract-runtime", "version": __version__},
        git_commit=git_commit[0] if git_commit else None,
        git_commit_source=git_commit[1] if git_commit else None,
        producer_ref=producer_ref or None,
        dag_bundle=dag_bundle(run),
        consumed_batches=consumed_batches(run) or None,
        step_params=mask_params(dict(producer.get("params") or {})),
        producer=PRODUCER,
    )


def partition_facet(partition: Partition) -> ContractAssetsPartitionRunFacet:
    """The ``contractAssets_partition`` run facet: ``{key, grain, column, start, end}`` of the
    run's partition (:meth:`~contract_runtime.partitions.Partition.facet`), ``start`` and ``end``
    ISO 8601 in UTC with offset, the half-open interval [start, end) of the key."""
    values = partition.facet()
    return ContractAssetsPartitionRunFacet(
        key=values["key"],
        grain=values["grain"],
        column=values["column"],
        start=values["start"],
        end=values["end"],
        producer=PRODUCER,
    )


def _partition_condition(partition: Partition) -> base_subset_dataset.PartitionSubsetCondition:
    """The official ``subset`` facet's partition condition for one key: ``identifier`` the key,
    ``dimensions`` ``{<partition column>: <key>}``, as the spec's own example names a date
    partition (``{"business_date": "2024-10-15"}``)."""
    return base_subset_dataset.PartitionSubsetCondition(
        partitions=[base_subset_dataset.Partition(dimensions={partition.column: partition.key}, identifier=partition.key)]
    )


def partition_subset_input_facet(partition: Partition) -> base_subset_dataset.InputSubsetInputDatasetFacet:
    """The official ``subset`` input facet (``BaseSubsetDatasetFacet.json``,
    ``InputSubsetInputDatasetFacet``): the partition of the dataset the audit tested."""
    return base_subset_dataset.InputSubsetInputDatasetFacet(inputCondition=_partition_condition(partition), producer=PRODUCER)


def partition_subset_output_facet(partition: Partition) -> base_subset_dataset.OutputSubsetOutputDatasetFacet:
    """The official ``subset`` output facet (``BaseSubsetDatasetFacet.json``,
    ``OutputSubsetOutputDatasetFacet``): the partition of the dataset the run replaced."""
    return base_subset_dataset.OutputSubsetOutputDatasetFacet(outputCondition=_partition_condition(partition), producer=PRODUCER)


def _optional_text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def is_commit(value: object) -> bool:
    """Tell whether ``value`` looks like a Git commit id (7 to 64 lower-case hex digits)."""
    return isinstance(value, str) and bool(_COMMIT.match(value))


def processing_facet(dag: Mapping[str, Any]) -> ContractAssetsProcessingJobFacet | None:
    """The ``contractAssets_processing`` job facet, or None when the contract declares no processing."""
    processing = dag.get("runtime", {}).get("processing")
    if not processing:
        return None
    return ContractAssetsProcessingJobFacet(
        purpose=str(processing["purpose"]),
        legal_basis=str(processing["legal_basis"]),
        producer=PRODUCER,
    )


def ownership_facet(dag: Mapping[str, Any]) -> ownership_job.OwnershipJobFacet | None:
    """The ``ownership`` job facet: the contract's owner team as ``OWNER``."""
    owner = dag.get("owner")
    if not owner:
        return None
    return ownership_job.OwnershipJobFacet(
        owners=[ownership_job.Owner(name=str(owner), type="OWNER")], producer=PRODUCER
    )


def documentation_facet(
    dag: Mapping[str, Any],
) -> documentation_job.DocumentationJobFacet | None:
    """The ``documentation`` job facet: the contract's description (the DAG's ``doc_md``)."""
    description = dag.get("description")
    if not description:
        return None
    return documentation_job.DocumentationJobFacet(
        description=str(description), contentType="text/markdown", producer=PRODUCER
    )


def job_type_facet() -> job_type_job.JobTypeJobFacet:
    """The ``jobType`` job facet: a batch contract job whose events accumulate on one run."""
    return job_type_job.JobTypeJobFacet(
        processingType="BATCH",
        integration=INTEGRATION,
        jobType="JOB",
        emissionPattern=job_type_job.EmissionPattern(
            eventTrigger="EVENT_BASED", eventContentMode="ACCUMULATIVE"
        ),
        producer=PRODUCER,
    )


def parent_facet(
    parent_namespace: str, dag_id: str, dag_run_ol_id: str
) -> parent_run.ParentRunFacet:
    """The ``parent`` run facet naming the Airflow DAG run, as the provider names it.

    The provider's task events carry ``parent`` = job ``(provider namespace, dag_id)`` with the
    DAG run's runId, and a ``root`` equal to it unless the DAG run was triggered with OpenLineage
    parent information in its conf.

    :param parent_namespace: The provider namespace (:func:`~contract_runtime.lineage.runid.provider_namespace`).
    :param dag_id: The DAG id.
    :param dag_run_ol_id: The DAG run's OpenLineage runId.
    """
    return parent_run.ParentRunFacet(
        # facets=None: the client's default ``{}`` would be serialised as an empty map
        run=parent_run.Run(runId=dag_run_ol_id, facets=None),
        job=parent_run.Job(namespace=parent_namespace, name=dag_id, facets=None),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=dag_run_ol_id, facets=None),
            job=parent_run.RootJob(
                namespace=parent_namespace, name=dag_id, facets=None
            ),
        ),
        producer=PRODUCER,
    )


def error_message_facet(
    error: BaseException, task_id: str
) -> error_message_run.ErrorMessageRunFacet:
    """The ``errorMessage`` run facet: one-line message, full traceback, ``python``.

    :param error: The exception that failed the task.
    :param task_id: The task that failed (named in the message).
    :returns: The facet, with credentials masked in both texts.
    """
    import traceback

    detail = " ".join(str(error).split())
    message = f"task {task_id} failed: {type(error).__name__}" + (
        f": {detail}" if detail else ""
    )
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "\u2026"
    stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return error_message_run.ErrorMessageRunFacet(
        message=mask_text(message),
        programmingLanguage="python",
        stackTrace=mask_text(stack),
        producer=PRODUCER,
    )


def schema_facet(
    columns: Sequence[Mapping[str, Any]],
) -> schema_dataset.SchemaDatasetFacet:
    """The ``schema`` dataset facet from observed columns ``[{name, type}]``, in table order."""
    return schema_dataset.SchemaDatasetFacet(
        fields=[
            schema_dataset.SchemaDatasetFacetFields(
                name=str(column["name"]),
                type=str(column["type"]) if column.get("type") is not None else None,
                fields=None,  # flat columns: no nested-field list
            )
            for column in columns
        ],
        producer=PRODUCER,
    )


def output_statistics_facet(
    row_count: int, size: int | None = None, file_count: int | None = None
) -> output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet:
    """The ``outputStatistics`` output facet: the published row count (and bytes and files written)."""
    return output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
        rowCount=int(row_count), size=size, fileCount=file_count, producer=PRODUCER
    )


def symlinks_facet(
    identifiers: Sequence[Mapping[str, str]],
) -> symlinks_dataset.SymlinksDatasetFacet:
    """The ``symlinks`` dataset facet from ``[{namespace, name, type}]``."""
    return symlinks_dataset.SymlinksDatasetFacet(
        identifiers=[
            symlinks_dataset.Identifier(
                namespace=i["namespace"], name=i["name"], type=i["type"]
            )
            for i in identifiers
        ],
        producer=PRODUCER,
    )


def _as_text(value: Any) -> str | None:
    """An expected/actual value as the string the facet wants: JSON for non-strings."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), default=str)


def assertions_facet(
    results: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, Any]]
) -> data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet:
    """The ``dataQualityAssertions`` input facet: one assertion per evaluated rule.

    :param results: The audit's results, ``{name, metric, column, severity, operator, expected,
        actual, success, type}`` each.
    :param rules: The dataset's quality rules from the manifest, to forward a rule's SQL
        (``content``) and ``description`` by name.
    :returns: The facet. ``assertion`` is the ODCS metric (``nullValues``), ``sql``, or for a
        dbt test (``type: dbt``) the generic test's name (``not_null``) or ``singular``;
        ``expected`` is the operator's value as text and ``params.operator`` the operator
        (``mustBeLessThan``), so the pair reads unambiguously.
    """
    by_name = {str(rule.get("name")): rule for rule in rules if rule.get("name")}
    assertions = []
    for result in results:
        rule = by_name.get(str(result.get("name")), {})
        query = rule.get("query")
        params: dict[str, Any] = {}
        if result.get("operator"):
            params["operator"] = str(result["operator"])
        if result.get("error"):
            # the database's message: why the rule could not be evaluated
            params["error"] = mask_text(str(result["error"]))
        assertions.append(
            data_quality_assertions_dataset.Assertion(
                # a dbt test names its generic test (not_null, relationships) or "singular"
                assertion=str(
                    result.get("metric") or result.get("test") or result.get("type") or "sql"
                ),
                success=bool(result["success"]),
                column=str(result["column"]) if result.get("column") else None,
                severity=str(result["severity"]) if result.get("severity") else None,
                name=str(result["name"]) if result.get("name") else None,
                description=str(rule["description"])
                if rule.get("description")
                else None,
                expected=_as_text(result.get("expected")),
                actual=_as_text(result.get("actual")),
                content=mask_text(str(query)) if query else None,
                contentType="sql" if query else None,
                params=params or None,
            )
        )
    return data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(
        assertions=assertions, producer=PRODUCER
    )
