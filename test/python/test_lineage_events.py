"""The emit hook's events: spec-valid, run-cycle rules, and facet content equal to the manifest.

Events go through the real openlineage-python client with its file transport (configured by the
client's own ``OPENLINEAGE__TRANSPORT__*`` env vars) into a temporary file, and are read back.
"""

from __future__ import annotations

import json
import re
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import __version__
from contract_runtime.lineage import (
    emit_assertions,
    emit_complete,
    emit_fail,
    emit_start,
)
from contract_runtime.lineage.facets import PRODUCER, SCHEMA_BASE_URL
from contract_runtime.lineage.runid import contract_run_id, dag_run_id, provider_namespace
from lineage_testkit import (
    CUSTOM_FACETS_DIR,
    check_run_cycle,
    dag_entry,
    iter_facets,
    load_manifest,
    make_run,
    read_events,
    requires_spec,
    synthetic_outputs,
    synthetic_results,
    use_file_transport,
    validate_event,
)

MANIFEST = load_manifest()
ALL_DAG_IDS = [d["dag_id"] for d in MANIFEST["dags"]]


@pytest.fixture
def events_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file the client appends events to; no git commit in the environment."""
    path = tmp_path / "events.jsonl"
    use_file_transport(monkeypatch, path)
    monkeypatch.delenv("CONTRACT_ASSETS_GIT_COMMIT", raising=False)
    monkeypatch.delenv("GIT_COMMIT", raising=False)
    return path


def _raise_nested() -> None:
    def load_rows() -> None:
        raise ValueError("2 rows of sales.orders\nviolate the primary key")

    try:
        load_rows()
    except ValueError as inner:
        raise RuntimeError("publish swap failed") from inner


def _failure() -> BaseException:
    try:
        _raise_nested()
    except RuntimeError as error:
        return error
    raise AssertionError("unreachable")


def simulate_success(dag: dict[str, Any]) -> None:
    """START from produce, one OTHER per dataset from audit, COMPLETE from publish."""
    emit_start(MANIFEST, dag, make_run(dag["dag_id"], "produce"))
    for dataset in dag["runtime"]["datasets"]:
        emit_assertions(
            MANIFEST,
            dag,
            make_run(dag["dag_id"], "audit"),
            dataset,
            synthetic_results(dataset),
        )
    emit_complete(
        MANIFEST, dag, make_run(dag["dag_id"], "publish"), synthetic_outputs(dag)
    )


def simulate_blocked(dag: dict[str, Any]) -> None:
    """START, OTHER naming a failed error rule, FAIL from audit's final try."""
    dataset = dag["runtime"]["datasets"][0]
    failing = dataset["quality"][0]["name"]
    emit_start(MANIFEST, dag, make_run(dag["dag_id"], "produce"))
    emit_assertions(
        MANIFEST,
        dag,
        make_run(dag["dag_id"], "audit"),
        dataset,
        synthetic_results(dataset, fail=failing),
    )
    emit_fail(
        MANIFEST,
        dag,
        make_run(dag["dag_id"], "audit", try_number=3),
        _failure(),
        "audit",
    )


@requires_spec
@pytest.mark.parametrize("dag_id", ALL_DAG_IDS)
def test_successful_run_of_every_dag_is_spec_valid_and_follows_the_run_cycle(
    events_file: Path, dag_id: str
) -> None:
    """START, OTHER per dataset, COMPLETE: every event and facet validates; cycle rules hold."""
    dag = dag_entry(MANIFEST, dag_id)
    simulate_success(dag)
    events = read_events(events_file)
    assert [e["eventType"] for e in events] == ["START"] + ["OTHER"] * len(
        dag["runtime"]["datasets"]
    ) + ["COMPLETE"]
    for event in events:
        validate_event(event)
    check_run_cycle(events, "COMPLETE")


@requires_spec
@pytest.mark.parametrize("dag_id", ["finance.invoices_curated", "crm.accounts_raw"])
def test_blocked_run_is_spec_valid_and_ends_in_one_fail(
    events_file: Path, dag_id: str
) -> None:
    """START, OTHER (the failing rule), FAIL: valid, one terminal event, OTHER before it."""
    simulate_blocked(dag_entry(MANIFEST, dag_id))
    events = read_events(events_file)
    assert [e["eventType"] for e in events] == ["START", "OTHER", "FAIL"]
    for event in events:
        validate_event(event)
    check_run_cycle(events, "FAIL")
    failed = [
        a
        for a in events[1]["inputs"][0]["inputFacets"]["dataQualityAssertions"][
            "assertions"
        ]
        if not a["success"]
    ]
    assert [a["name"] for a in failed] == [
        dag_entry(MANIFEST, dag_id)["runtime"]["datasets"][0]["quality"][0]["name"]
    ]
    assert events[2]["inputs"] == [] and events[2]["outputs"] == []


def test_job_identity_and_job_facets_equal_the_manifest(events_file: Path) -> None:
    """Job namespace ``<lineage ns>.<domain>``, name = contract id; ownership, documentation, processing."""
    dag = dag_entry(MANIFEST, "revrec.monthly")
    simulate_success(dag)
    for event in read_events(events_file):
        job = event["job"]
        assert (
            job["namespace"]
            == f"{MANIFEST['lineage']['namespace']}.{dag['runtime']['domain']}"
            == "acme.revrec"
        )
        assert job["name"] == dag["dag_id"] == "revrec.monthly"
        facets = job["facets"]
        assert facets["ownership"]["owners"] == [
            {"name": dag["owner"], "type": "OWNER"}
        ]
        assert facets["documentation"]["description"] == dag["description"]
        assert facets["jobType"]["processingType"] == "BATCH"
        assert facets["jobType"]["integration"] == "CONTRACT_ASSETS"
        processing = facets["contractAssets_processing"]
        assert {k: processing[k] for k in ("purpose", "legal_basis")} == dag["runtime"][
            "processing"
        ]


def test_no_processing_facet_when_the_contract_declares_none(events_file: Path) -> None:
    """A contract without ``processing`` gets no ``contractAssets_processing`` facet."""
    dag = dag_entry(MANIFEST, "finance.invoices_curated")
    assert "processing" not in dag["runtime"]
    emit_start(MANIFEST, dag, make_run(dag["dag_id"]))
    (event,) = read_events(events_file)
    assert "contractAssets_processing" not in event["job"]["facets"]


def test_provenance_facet_equals_the_manifest(events_file: Path) -> None:
    """Contract path, hashes, versions, pins, compiler and runtime versions, step_params."""
    dag = dag_entry(MANIFEST, "finance.invoices_curated")
    simulate_success(dag)
    events = read_events(events_file)
    for event in events:
        provenance = event["run"]["facets"]["contractAssets_provenance"]
        assert provenance["contract_id"] == dag["dag_id"]
        assert provenance["contract"] == dag["contract"]
        assert provenance["contract_sha256"] == dag["contract_sha256"]
        assert provenance["contract_git_blob"] == dag["contract_git_blob"]
        assert provenance["contract_version"] == dag["contract_version"]
        assert provenance["manifest_version"] == MANIFEST["manifestVersion"]
        assert provenance["schema_versions"] == {
            d["asset"]: d["schema"]["version"] for d in dag["runtime"]["datasets"]
        }
        # the manifest pins billing.invoice_lines_raw and leaves billing.invoices_raw unpinned
        pins = {
            u["asset"]: u["schema_version"]
            for u in dag["runtime"]["upstreams"]
            if "schema_version" in u
        }
        assert list(pins) == ["billing.invoice_lines_raw"]
        assert provenance["upstream_schema_versions"] == pins
        assert provenance["compiler"] == {
            "name": MANIFEST["compiler"]["name"],
            "version": MANIFEST["compiler"]["version"],
        }
        assert provenance["runtime"] == {
            "name": "contract-runtime",
            "version": __version__,
        }
        assert provenance["step_params"] == dag["runtime"]["producer"]["params"]
        # finance.invoices_curated is a dbt model: its project and selection name the code
        assert provenance["producer_ref"] == {"type": "dbt", "project": "dbt/finance", "select": "invoices_curated"}
        assert "git_commit" not in provenance  # unknown here: no bundle version, no env
        assert provenance["_producer"] == PRODUCER
        assert provenance["_schemaURL"] == (
            f"{SCHEMA_BASE_URL}ContractAssetsProvenanceRunFacet.json#/$defs/ContractAssetsProvenanceRunFacet"
        )


def test_git_commit_from_the_environment_and_from_the_bundle_version(
    events_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CONTRACT_ASSETS_GIT_COMMIT is used when there is no bundle version; a bundle version wins."""
    import dataclasses

    dag = dag_entry(MANIFEST, "crm.accounts_raw")
    monkeypatch.setenv("GIT_COMMIT", "not-a-commit")
    emit_start(MANIFEST, dag, make_run(dag["dag_id"]))
    monkeypatch.setenv(
        "CONTRACT_ASSETS_GIT_COMMIT", "0123456789abcdef0123456789abcdef01234567"
    )
    emit_start(MANIFEST, dag, make_run(dag["dag_id"]))

    emit_start(
        MANIFEST,
        dag,
        dataclasses.replace(
            make_run(dag["dag_id"]),
            bundle_version="fedcba9876543210fedcba9876543210fedcba98",
        ),
    )
    first, second, third = (
        e["run"]["facets"]["contractAssets_provenance"]
        for e in read_events(events_file)
    )
    assert "git_commit" not in first
    assert (second["git_commit"], second["git_commit_source"]) == (
        "0123456789abcdef0123456789abcdef01234567",
        "env",
    )
    assert (third["git_commit"], third["git_commit_source"]) == (
        "fedcba9876543210fedcba9876543210fedcba98",
        "dag_bundle",
    )


def test_run_id_and_parent_name_the_airflow_dag_run(events_file: Path) -> None:
    """runId is our contract run's, derived from the provider's DAG-run id; ``parent`` and
    ``root`` name the DAG run as the provider does (ADR 0010)."""
    from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter

    dag = dag_entry(MANIFEST, "revrec.close_summary")
    simulate_success(dag)
    run = make_run(dag["dag_id"])
    expected = OpenLineageAdapter.build_dag_run_id(
        dag_id=dag["dag_id"], logical_date=run.run_after, clear_number=0
    )
    assert expected == dag_run_id(run)
    for event in read_events(events_file):
        assert event["run"]["runId"] == contract_run_id(run) != expected
        parent = event["run"]["facets"]["parent"]
        assert parent["run"] == {"runId": expected}
        assert parent["job"] == {
            "namespace": provider_namespace(),
            "name": dag["dag_id"],
        }
        assert parent["root"] == {
            "run": {"runId": expected},
            "job": {"namespace": provider_namespace(), "name": dag["dag_id"]},
        }


def test_assertions_ride_on_the_tested_dataset_input(events_file: Path) -> None:
    """One assertion per rule with name, column, success, severity, expected, actual; SQL as content."""
    dag = dag_entry(MANIFEST, "billing.credit_notes_raw")
    dataset = dag["runtime"]["datasets"][0]
    results = synthetic_results(dataset, fail="credits_are_positive")
    emit_assertions(MANIFEST, dag, make_run(dag["dag_id"], "audit"), dataset, results)
    (event,) = read_events(events_file)
    assert event["eventType"] == "OTHER" and event["outputs"] == []
    (tested,) = event["inputs"]
    assert (tested["namespace"], tested["name"]) == (
        MANIFEST["lineage"]["namespace"],
        dataset["asset"],
    )
    assert tested["facets"]["symlinks"]["identifiers"] == [
        {
            "namespace": "x-datalake://raw",
            "name": "billing.credit_notes_raw",
            "type": "ASSET",
        }
    ]
    assertions = tested["inputFacets"]["dataQualityAssertions"]["assertions"]
    assert [a["name"] for a in assertions] == [r["name"] for r in results]
    by_name = {a["name"]: a for a in assertions}
    assert by_name["nullValues_credit_note_id"] == {
        "assertion": "nullValues",
        "name": "nullValues_credit_note_id",
        "column": "credit_note_id",
        "success": True,
        "severity": "error",
        "expected": "0",
        "actual": "0",
        "params": {"operator": "mustBe"},
    }
    sql_rule = by_name["credits_are_positive"]
    assert (
        sql_rule["success"] is False
        and sql_rule["actual"] == "7"
        and sql_rule["assertion"] == "sql"
    )
    assert sql_rule["content"] == "select count(*) from {dataset} where amount <= 0"
    assert sql_rule["contentType"] == "sql"
    assert "column" not in sql_rule
    assert json.loads(by_name["invalidValues_reason"]["expected"]) == 0


def test_complete_outputs_carry_schema_statistics_and_asset_symlink(
    events_file: Path,
) -> None:
    """Observed columns, row count, the Asset as symlink; inputs are the DAG's inlets."""
    dag = dag_entry(MANIFEST, "revrec.monthly")
    outputs = synthetic_outputs(dag, row_count=1234)
    emit_complete(MANIFEST, dag, make_run(dag["dag_id"], "publish"), outputs)
    (event,) = read_events(events_file)
    assert event["eventType"] == "COMPLETE"
    assert [(o["namespace"], o["name"]) for o in event["outputs"]] == [
        ("acme", o["asset"]) for o in outputs
    ]
    for emitted, output in zip(event["outputs"], outputs):
        assert emitted["facets"]["schema"]["fields"] == [
            {"name": c["name"], "type": c["type"]} for c in output["columns"]
        ]
        assert emitted["outputFacets"]["outputStatistics"]["rowCount"] == 1234
        assert emitted["facets"]["symlinks"]["identifiers"] == [
            {
                "namespace": "x-datalake://curated",
                "name": output["asset"],
                "type": "ASSET",
            }
        ]
    assert [i["name"] for i in event["inputs"]] == dag["inlets"]
    assert all(i["namespace"] == "acme" for i in event["inputs"])


def test_warehouse_namespace_and_physical_identity(events_file: Path) -> None:
    """A passed warehouse namespace/database shapes names; ``physical`` wins; external URIs stay physical."""
    from contract_runtime.lineage import sql_warehouse_namespace

    manifest = json.loads(json.dumps(MANIFEST))
    dag = dag_entry(manifest, "billing.credit_notes_raw")
    outputs = synthetic_outputs(dag)
    for output in outputs:
        output["warehouse_namespace"] = sql_warehouse_namespace(
            "postgresql://etl:pw@warehouse.internal/analytics"
        )
        output["warehouse_database"] = "analytics"
    emit_complete(manifest, dag, make_run(dag["dag_id"], "publish"), outputs)
    dag["runtime"]["datasets"][0]["physical"] = {
        "namespace": "postgres://pg.example:5433",
        "name": "lake.raw.credit_notes",
    }
    emit_complete(manifest, dag, make_run(dag["dag_id"], "publish"), outputs)
    first, second = read_events(events_file)
    assert (first["outputs"][0]["namespace"], first["outputs"][0]["name"]) == (
        "postgres://warehouse.internal:5432",
        "analytics.billing.credit_notes_raw",
    )
    assert (second["outputs"][0]["namespace"], second["outputs"][0]["name"]) == (
        "postgres://pg.example:5433",
        "lake.raw.credit_notes",
    )
    # the ingestion source is an s3 object prefix: OpenLineage naming for object stores
    assert (first["inputs"][0]["namespace"], first["inputs"][0]["name"]) == (
        "s3://acme-billing-exports",
        "credit-notes",
    )


def test_quarantined_output_is_not_symlinked_to_the_asset(events_file: Path) -> None:
    """A quarantined output is identified by its quarantine table and does not claim the Asset."""
    dag = dag_entry(MANIFEST, "crm.contracts_raw")
    (output,) = synthetic_outputs(dag)
    output.update(table="quarantine.crm__contracts_raw", quarantined=True)
    emit_complete(MANIFEST, dag, make_run(dag["dag_id"], "publish"), [output])
    (event,) = read_events(events_file)
    (emitted,) = event["outputs"]
    assert emitted["name"] == "quarantine.crm__contracts_raw"
    assert "symlinks" not in emitted["facets"]


def test_fail_carries_one_line_message_and_the_stack_trace(events_file: Path) -> None:
    """``errorMessage``: one-line message naming the task, traceback in stackTrace, python."""
    dag = dag_entry(MANIFEST, "finance.fiscal_calendar")
    emit_fail(
        MANIFEST,
        dag,
        make_run(dag["dag_id"], "produce", try_number=1),
        _failure(),
        "produce",
    )
    (event,) = read_events(events_file)
    error = event["run"]["facets"]["errorMessage"]
    assert error["message"] == "task produce failed: RuntimeError: publish swap failed"
    assert "\n" not in error["message"]
    assert error["programmingLanguage"] == "python"
    assert "Traceback (most recent call last)" in error["stackTrace"]
    assert (
        "load_rows" in error["stackTrace"]
        and "violate the primary key" in error["stackTrace"]
    )
    assert "contractAssets_provenance" in event["run"]["facets"]


def test_multi_line_error_messages_become_one_line(events_file: Path) -> None:
    """Newlines and runs of whitespace in the exception text collapse to single spaces."""
    dag = dag_entry(MANIFEST, "finance.fiscal_calendar")
    emit_fail(
        MANIFEST,
        dag,
        make_run(dag["dag_id"], "audit"),
        ValueError("rule a failed\n  rule b failed\r\n"),
        "audit",
    )
    (event,) = read_events(events_file)
    assert (
        event["run"]["facets"]["errorMessage"]["message"]
        == "task audit failed: ValueError: rule a failed rule b failed"
    )


def test_every_facet_has_producer_and_schema_url(events_file: Path) -> None:
    """Our facets carry our producer; event producer and times are set."""
    dag = dag_entry(MANIFEST, "revrec.monthly")
    simulate_success(dag)
    for event in read_events(events_file):
        assert event["producer"] == PRODUCER
        assert re.match(
            r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$", event["eventTime"]
        )
        for where, key, facet in iter_facets(event):
            assert facet["_schemaURL"].startswith("https://"), (where, key)
            if (
                key != "tags"
            ):  # the tags facet is added by the openlineage client itself
                assert facet["_producer"] == PRODUCER, (where, key)


def test_custom_facet_schemas_are_laid_out_like_the_official_ones() -> None:
    """``$id`` under our base URL, a ``$defs`` entry extending RunFacet/JobFacet, a named property."""
    from contract_runtime.lineage import facets as F

    expected = {
        "ContractAssetsProvenanceRunFacet.json": (
            "contractAssets_provenance",
            "RunFacet",
            F.ContractAssetsProvenanceRunFacet,
        ),
        "ContractAssetsProcessingJobFacet.json": (
            "contractAssets_processing",
            "JobFacet",
            F.ContractAssetsProcessingJobFacet,
        ),
        "ContractAssetsShrinkRunFacet.json": (
            "contractAssets_shrink",
            "RunFacet",
            F.ContractAssetsShrinkRunFacet,
        ),
        "ContractAssetsSkipRunFacet.json": (
            "contractAssets_skip",
            "RunFacet",
            F.ContractAssetsSkipRunFacet,
        ),
        "ContractAssetsPartitionRunFacet.json": (
            "contractAssets_partition",
            "RunFacet",
            F.ContractAssetsPartitionRunFacet,
        ),
        "ContractAssetsFilesInputDatasetFacet.json": (
            "contractAssets_files",
            "InputDatasetFacet",
            F.ContractAssetsFilesInputDatasetFacet,
        ),
        "ContractAssetsFilesOutputDatasetFacet.json": (
            "contractAssets_files",
            "OutputDatasetFacet",
            F.ContractAssetsFilesOutputDatasetFacet,
        ),
    }
    assert sorted(p.name for p in CUSTOM_FACETS_DIR.glob("*.json")) == sorted(expected)
    for file_name, (key, base, cls) in expected.items():
        schema = json.loads((CUSTOM_FACETS_DIR / file_name).read_text(encoding="utf-8"))
        name = file_name.removesuffix(".json")
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"] == f"{SCHEMA_BASE_URL}{file_name}"
        assert schema["properties"] == {key: {"$ref": f"#/$defs/{name}"}}
        assert schema["$defs"][name]["allOf"][0] == {
            "$ref": f"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/{base}"
        }
        assert cls._get_schema() == f"{schema['$id']}#/$defs/{name}"


def test_event_times_are_utc_and_tz_aware(events_file: Path) -> None:
    """eventTime is now() in UTC with an explicit offset."""
    from datetime import datetime, timedelta

    dag = dag_entry(MANIFEST, "crm.accounts_raw")
    before = datetime.now(UTC)
    emit_start(MANIFEST, dag, make_run(dag["dag_id"]))
    (event,) = read_events(events_file)
    when = datetime.fromisoformat(event["eventTime"])
    assert when.utcoffset() == timedelta(0)
    assert before - timedelta(seconds=1) <= when <= datetime.now(UTC)


@requires_spec
def test_hand_made_manifest_without_contract_hashes_still_emits(
    events_file: Path,
) -> None:
    """Missing contract path/hash/version (never so in a compiled manifest) drop those fields only."""
    manifest = json.loads(json.dumps(MANIFEST))
    dag = dag_entry(manifest, "crm.accounts_raw")
    for key in ("contract", "contract_sha256", "contract_git_blob", "contract_version"):
        del dag[key]
    emit_start(manifest, dag, make_run(dag["dag_id"]))
    (event,) = read_events(events_file)
    validate_event(event)
    provenance = event["run"]["facets"]["contractAssets_provenance"]
    assert (
        provenance["contract_id"] == "crm.accounts_raw"
        and "contract_sha256" not in provenance
    )
