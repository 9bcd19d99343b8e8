"""The bundled python producer revrec_jobs.monthly: straight-line recognition, deferred revenue
balances and closed periods, through the producer context on a temporary DuckDB."""

from __future__ import annotations

import datetime
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from contract_runtime.producers import ProduceRequest
from contract_runtime.producers.python import ProducerContext
from contract_runtime.sqlutil import TableRef
from contract_runtime.tables import staging_table
from contract_runtime.warehouse import DuckDBWarehouse
from runtime_support import run_identity

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "orchestration" / "jobs"))

from revrec_jobs import monthly

D = Decimal


def test_split_evenly_sums_exactly() -> None:
    assert monthly.split_evenly(D("100.00"), 3) == [D("33.33"), D("33.33"), D("33.34")]
    assert monthly.split_evenly(D("7680.00"), 12) == [D("640.00")] * 12
    for total, n in ((D("22200.00"), 12), (D("0.05"), 7), (D("151200.00"), 36), (D("-10.00"), 3)):
        parts = monthly.split_evenly(total, n)
        assert len(parts) == n and sum(parts) == total
    assert monthly.split_evenly(D("1"), 0) == []


CONTRACTS = [
    {
        "contract_id": "C1",
        "account_id": "A1",
        "start_date": datetime.date(2025, 11, 15),
        "service_months": 3,
        "currency": "USD",
        "total_contract_value": D("100.00"),
        "total_contract_value_eur": D("90.00"),
    },
    {
        "contract_id": "C2",
        "account_id": "A2",
        "start_date": datetime.date(2026, 1, 1),
        "service_months": 2,
        "currency": "EUR",
        "total_contract_value": D("50.00"),
        "total_contract_value_eur": D("50.00"),
    },
]


def test_revenue_schedule() -> None:
    rows = monthly.revenue_schedule(CONTRACTS)
    c1 = [r for r in rows if r["contract_id"] == "C1"]
    assert [r["period_month"] for r in c1] == [
        datetime.date(2025, 11, 1),
        datetime.date(2025, 12, 1),
        datetime.date(2026, 1, 1),
    ]
    assert [r["recognized_amount"] for r in c1] == [D("33.33"), D("33.33"), D("33.34")]
    assert [r["cumulative_recognized_amount"] for r in c1] == [D("33.33"), D("66.66"), D("100.00")]
    assert sum(r["recognized_amount_eur"] for r in c1) == D("90.00")
    with pytest.raises(ValueError, match="total_contract_value_eur"):
        monthly.revenue_schedule([dict(CONTRACTS[0], total_contract_value_eur=None)])


def test_deferred_balances_identity() -> None:
    schedule = monthly.revenue_schedule(CONTRACTS)
    billings = [
        {"contract_id": "C1", "billing_month": datetime.date(2025, 11, 1), "net_billed_amount": D("100.00")},
        {"contract_id": "C2", "billing_month": datetime.date(2026, 2, 1), "net_billed_amount": D("25.00")},
    ]
    rows = monthly.deferred_balances(CONTRACTS, schedule, billings, datetime.date(2026, 2, 1))
    by = {(r["contract_id"], r["period_month"]): r for r in rows}
    assert len([r for r in rows if r["contract_id"] == "C1"]) == 4  # Nov..Feb, past the end of service
    r = by[("C1", datetime.date(2025, 11, 1))]
    assert (r["cumulative_billed_amount"], r["cumulative_recognized_amount"], r["deferred_revenue_amount"]) == (
        D("100.00"),
        D("33.33"),
        D("66.67"),
    )
    assert r["deferred_revenue_amount_eur"] == D("60.00")  # 66.67 * 0.9
    assert by[("C1", datetime.date(2026, 2, 1))]["deferred_revenue_amount"] == D("0.00")
    r = by[("C2", datetime.date(2026, 1, 1))]
    assert r["deferred_revenue_amount"] == D("-25.00")  # unbilled revenue
    for r in rows:
        assert r["deferred_revenue_amount"] == r["cumulative_billed_amount"] - r["cumulative_recognized_amount"]


def test_closed_periods_come_from_the_published_rows() -> None:
    jan, feb = datetime.date(2026, 1, 1), datetime.date(2026, 2, 1)
    computed = [{"contract_id": "C", "period_month": jan, "v": 1}, {"contract_id": "C", "period_month": feb, "v": 1}]
    published = [{"contract_id": "C", "period_month": jan, "v": 0}, {"contract_id": "X", "period_month": jan, "v": 9}]
    assert monthly.keep_closed_periods(computed, None, {jan}) == computed
    kept = monthly.keep_closed_periods(computed, published, {jan})
    assert kept == [
        {"contract_id": "C", "period_month": jan, "v": 0},
        {"contract_id": "C", "period_month": feb, "v": 1},
        {"contract_id": "X", "period_month": jan, "v": 9},
    ]


def _context(
    tmp_path: Path, wh: DuckDBWarehouse, params: dict[str, Any], logical: datetime.datetime
) -> ProducerContext:
    import copy

    from contract_runtime.manifest import load_manifest

    manifest = copy.deepcopy(dict(load_manifest(REPO / "generated" / "manifest.json")))
    dag = copy.deepcopy(next(d for d in manifest["dags"] if d["dag_id"] == "revrec.monthly"))
    dag["runtime"]["producer"]["params"] = params
    run = run_identity("revrec.monthly", run_id="rr", logical_date=logical)
    staging = {d["name"]: staging_table("revrec", d["name"], run.run_hash) for d in dag["runtime"]["datasets"]}
    req = ProduceRequest(
        manifest_path=str(REPO / "generated" / "manifest.json"),
        manifest=manifest,
        dag=dag,
        run=run,
        warehouse=wh,
        staging=staging,
    )
    return ProducerContext(req)


def _seed(wh: DuckDBWarehouse) -> None:
    cc = TableRef("finance", "contracts_curated")
    wh.create_table(
        cc,
        [
            ("contract_id", "VARCHAR"),
            ("account_id", "VARCHAR"),
            ("start_date", "DATE"),
            ("service_months", "INTEGER"),
            ("currency", "VARCHAR"),
            ("total_contract_value", "DECIMAL(18,2)"),
            ("total_contract_value_eur", "DECIMAL(18,2)"),
        ],
    )
    wh.insert_rows(cc, [c for c in CONTRACTS[0]], [tuple(c.values()) for c in CONTRACTS])
    bb = TableRef("finance", "billings_by_contract")
    wh.create_table(bb, [("contract_id", "VARCHAR"), ("billing_month", "DATE"), ("net_billed_amount", "DECIMAL(18,2)")])
    wh.insert_rows(
        bb, ["contract_id", "billing_month", "net_billed_amount"], [("C1", datetime.date(2025, 11, 1), D("100.00"))]
    )


def test_compute_through_the_context(tmp_path: Path) -> None:
    params = {
        "method": "straight_line",
        "period_grain": "month",
        "reporting_currency": "EUR",
        "first_period": "2025-12",
    }
    with DuckDBWarehouse(tmp_path / "rr.duckdb") as wh:
        _seed(wh)
        ctx = _context(tmp_path, wh, params, datetime.datetime(2026, 2, 10, tzinfo=datetime.UTC))
        monthly.compute(ctx)
        sched = wh.fetch(f"select contract_id, period_month from {ctx.staging['revenue_schedule'].sql} order by 1, 2")
        assert sched[0] == ("C1", datetime.date(2025, 12, 1))  # first_period cuts November
        assert len(sched) == 2 + 2
        bal = wh.fetch(
            f"select contract_id, period_month, cumulative_recognized_amount from {ctx.staging['deferred_revenue_balance'].sql} order by 1, 2"
        )
        # closing month = January 2026 (the last complete month before 10 Feb)
        assert bal[-1][1] == datetime.date(2026, 1, 1)
        assert bal[0] == ("C1", datetime.date(2025, 12, 1), D("66.66"))  # cumulative counts November

        # closed months are carried over from what is published
        wh.swap(
            [
                (ctx.staging["revenue_schedule"], TableRef("revrec", "revenue_schedule")),
                (ctx.staging["deferred_revenue_balance"], TableRef("revrec", "deferred_revenue_balance")),
            ]
        )
        wh.execute("update revrec.revenue_schedule set recognized_amount = 999 where period_month = date '2025-12-01'")
        cal = TableRef("finance", "fiscal_calendar")
        wh.create_table(cal, [("fiscal_month", "DATE"), ("is_closed", "BOOLEAN")])
        wh.insert_rows(
            cal, ["fiscal_month", "is_closed"], [(datetime.date(2025, 12, 1), True), (datetime.date(2026, 1, 1), False)]
        )
        monthly.compute(ctx)
        dec = wh.fetch(
            f"select recognized_amount from {ctx.staging['revenue_schedule'].sql} where period_month = date '2025-12-01'"
        )
        jan = wh.fetch(
            f"select recognized_amount from {ctx.staging['revenue_schedule'].sql} where contract_id = 'C1' and period_month = date '2026-01-01'"
        )
        assert dec == [(D("999.00"),)] and jan == [(D("33.34"),)]


def test_compute_refuses_other_methods(tmp_path: Path) -> None:
    with DuckDBWarehouse(tmp_path / "rr.duckdb") as wh:
        _seed(wh)
        ctx = _context(tmp_path, wh, {"method": "milestones"}, datetime.datetime(2026, 2, 10, tzinfo=datetime.UTC))
        with pytest.raises(ValueError, match="straight_line"):
            monthly.compute(ctx)
