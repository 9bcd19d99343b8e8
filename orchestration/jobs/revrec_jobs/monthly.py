"""Monthly revenue recognition: the producer of contract ``revrec.monthly``."""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

CENT = Decimal("0.01")

SCHEDULE_COLUMNS = (
    "contract_id",
    "account_id",
    "period_month",
    "currency",
    "recognized_amount",
    "recognized_amount_eur",
    "cumulative_recognized_amount",
)
BALANCE_COLUMNS = (
    "contract_id",
    "period_month",
    "currency",
    "cumulative_billed_amount",
    "cumulative_recognized_amount",
    "deferred_revenue_amount",
    "deferred_revenue_amount_eur",
)


def _cents(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def _month_start(day: datetime.date) -> datetime.date:
    return datetime.date(day.year, day.month, 1)


def _add_months(month: datetime.date, n: int) -> datetime.date:
    index = month.year * 12 + (month.month - 1) + n
    return datetime.date(index // 12, index % 12 + 1, 1)


def _as_date(value: Any) -> datetime.date:
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    return datetime.date.fromisoformat(str(value)[:10])


def _dec(value: Any) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(str(value))


def split_evenly(total: Decimal, months: int) -> list[Decimal]:
    """``total`` in ``months`` equal shares rounded to the cent, the remainder on the last share.

    >>> split_evenly(Decimal("100.00"), 3)
    [Decimal('33.33'), Decimal('33.33'), Decimal('33.34')]
    """
    if months <= 0:
        return []
    share = _cents(total / months)
    shares = [share] * (months - 1)
    return [*shares, _cents(total) - sum(shares, Decimal(0))]


def revenue_schedule(contracts: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Straight-line schedule rows (``SCHEDULE_COLUMNS``) for each contract.

    A contract mapping holds ``contract_id``, ``account_id``, ``start_date``,
    ``service_months``, ``currency``, ``total_contract_value`` and ``total_contract_value_eur``.
    The EUR amounts are split the same way from ``total_contract_value_eur``, so both columns
    sum exactly to the contract value.

    :raises ValueError: When a contract has no EUR value.
    """
    rows: list[dict[str, Any]] = []
    for c in contracts:
        months = int(c["service_months"] or 0)
        tcv = _dec(c["total_contract_value"])
        if c["total_contract_value_eur"] is None:
            raise ValueError(f"contract {c['contract_id']} has no total_contract_value_eur")
        tcv_eur = _dec(c["total_contract_value_eur"])
        start = _month_start(_as_date(c["start_date"]))
        cumulative = Decimal("0.00")
        for i, (amount, amount_eur) in enumerate(
            zip(split_evenly(tcv, months), split_evenly(tcv_eur, months), strict=True)
        ):
            cumulative += amount
            rows.append(
                {
                    "contract_id": c["contract_id"],
                    "account_id": c["account_id"],
                    "period_month": _add_months(start, i),
                    "currency": c["currency"],
                    "recognized_amount": amount,
                    "recognized_amount_eur": amount_eur,
                    "cumulative_recognized_amount": cumulative,
                }
            )
    return rows


def deferred_balances(
    contracts: Iterable[Mapping[str, Any]],
    schedule: Iterable[Mapping[str, Any]],
    billings: Iterable[Mapping[str, Any]],
    closing_month: datetime.date,
) -> list[dict[str, Any]]:
    """Month-end balances (``BALANCE_COLUMNS``) from each contract's start to ``closing_month``.

    ``cumulative_billed_amount`` sums ``net_billed_amount`` of the billing months up to and
    including the month; ``cumulative_recognized_amount`` sums the schedule likewise;
    ``deferred_revenue_amount`` is their difference, ``deferred_revenue_amount_eur`` that
    difference at the contract's own EUR rate (``total_contract_value_eur /
    total_contract_value``), rounded to the cent.
    """
    recognized: dict[str, dict[datetime.date, Decimal]] = defaultdict(dict)
    for r in schedule:
        recognized[str(r["contract_id"])][_as_date(r["period_month"])] = _dec(r["recognized_amount"])
    billed: dict[str, dict[datetime.date, Decimal]] = defaultdict(lambda: defaultdict(lambda: Decimal(0)))
    for b in billings:
        billed[str(b["contract_id"])][_month_start(_as_date(b["billing_month"]))] += _dec(b["net_billed_amount"])
    rows: list[dict[str, Any]] = []
    for c in contracts:
        cid = str(c["contract_id"])
        tcv = _dec(c["total_contract_value"])
        rate = _dec(c["total_contract_value_eur"]) / tcv if tcv else Decimal(0)
        month = _month_start(_as_date(c["start_date"]))
        while month <= closing_month:
            cum_billed = _cents(sum((v for m, v in billed[cid].items() if m <= month), Decimal(0)))
            cum_rec = _cents(sum((v for m, v in recognized[cid].items() if m <= month), Decimal(0)))
            deferred = cum_billed - cum_rec
            rows.append(
                {
                    "contract_id": cid,
                    "period_month": month,
                    "currency": c["currency"],
                    "cumulative_billed_amount": cum_billed,
                    "cumulative_recognized_amount": cum_rec,
                    "deferred_revenue_amount": deferred,
                    "deferred_revenue_amount_eur": _cents(deferred * rate),
                }
            )
            month = _add_months(month, 1)
    return rows


def keep_closed_periods(
    computed: list[dict[str, Any]], published: list[dict[str, Any]] | None, closed: set[datetime.date]
) -> list[dict[str, Any]]:
    """Rows of closed months come from the published dataset, unchanged; the others are new.

    With nothing published yet (``published`` None) every computed row is kept.
    """
    if published is None or not closed:
        return computed
    fresh = [r for r in computed if _as_date(r["period_month"]) not in closed]
    carried = [r for r in published if _as_date(r["period_month"]) in closed]
    return sorted(carried + fresh, key=lambda r: (str(r["contract_id"]), _as_date(r["period_month"])))


def _query(context: Any, sql: str, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row, strict=True)) for row in context.warehouse.fetch(sql)]


def _published(context: Any, dataset: str, columns: tuple[str, ...]) -> list[dict[str, Any]] | None:
    table = context.target(dataset)
    if not context.warehouse.table_exists(table):
        return None
    cols = ", ".join(f'"{c}"' for c in columns)
    return _query(context, f"select {cols} from {table.sql}", columns)


def compute(context: Any) -> None:
    """Compute the revenue schedule and the deferred revenue balance.

    Inputs (the contract's upstreams):

    - ``finance.contracts_curated``: one row per contract with ``start_date``, ``end_date``
      (inclusive), ``service_months``, ``total_contract_value`` in the contract currency and
      ``total_contract_value_eur``.
    - ``finance.billings_by_contract``: net billings (invoices less credit notes) per contract
      and calendar month, in the document currency and in EUR.
    - ``finance.fiscal_calendar`` (read only): which fiscal months are already closed.

    Outputs (the contract's two datasets):

    - ``revrec.revenue_schedule``: straight-line recognition. Each contract's total contract
      value is spread evenly over the calendar months of its service period, one row per
      contract and month: ``total_contract_value / service_months`` per month, rounded to the
      cent, with the rounding remainder put on the last month so the schedule sums exactly to
      the contract value. ``recognized_amount_eur`` applies the contract's own EUR rate
      (``total_contract_value_eur / total_contract_value``); ``cumulative_recognized_amount``
      is the running total up to and including the month. Terminated contracts are recognized
      up to their termination date (their ``end_date``).
    - ``revrec.deferred_revenue_balance``: for each contract and each month from its start up
      to the closing month (the last complete month before the run's logical date), the
      balance at month end: cumulative net billings to date less cumulative revenue recognized
      to date. Positive is deferred revenue (a contract liability); negative is unbilled
      revenue (a contract asset). ``deferred_revenue_amount_eur`` uses the contract's EUR rate.

    Months that the fiscal calendar marks as closed are never restated: their rows are carried
    over unchanged from the published datasets.

    ``params`` (``method``, ``period_grain``, ``reporting_currency``, ``first_period``) come
    from the contract and are recorded as provenance ``step_params``.

    How this implementation reads them: ``method`` must be ``straight_line``, ``period_grain``
    ``month`` and ``reporting_currency`` ``EUR`` (anything else fails the run rather than
    computing something else); ``first_period`` (``YYYY-MM``) is the first month written to
    either dataset (cumulative amounts still count earlier months). The run's date is its
    logical date, or ``run_after`` for runs without one (asset-triggered runs). The EUR
    amounts of the schedule are split like the contract-currency amounts, from
    ``total_contract_value_eur``, so they too sum exactly. The fiscal calendar is optional: when
    its table does not exist no month counts as closed.

    :param context: The :class:`contract_runtime.producers.python.ProducerContext`.
    :raises ValueError: For unsupported params or a contract without a EUR value.
    """
    params = context.params
    for key, wanted in (("method", "straight_line"), ("period_grain", "month"), ("reporting_currency", "EUR")):
        if params.get(key, wanted) != wanted:
            raise ValueError(f"revrec.monthly supports {key}={wanted!r} only, got {params.get(key)!r}")
    first_period = params.get("first_period")
    first_month = datetime.date.fromisoformat(f"{first_period}-01") if first_period else datetime.date.min

    contract_cols = (
        "contract_id",
        "account_id",
        "start_date",
        "service_months",
        "currency",
        "total_contract_value",
        "total_contract_value_eur",
    )
    contracts = _query(
        context,
        f"select {', '.join(contract_cols)} from {context.table('finance.contracts_curated').sql} order by contract_id",
        contract_cols,
    )
    billings = _query(
        context,
        "select contract_id, billing_month, net_billed_amount from "
        f"{context.table('finance.billings_by_contract').sql}",
        ("contract_id", "billing_month", "net_billed_amount"),
    )
    calendar = context.table("finance.fiscal_calendar")
    closed: set[datetime.date] = set()
    if context.warehouse.table_exists(calendar):
        closed = {
            _as_date(r[0]) for r in context.warehouse.fetch(f"select fiscal_month from {calendar.sql} where is_closed")
        }

    reference = context.run.reference_date.date()
    closing_month = _add_months(_month_start(reference), -1)

    schedule = revenue_schedule(contracts)
    balances = deferred_balances(contracts, schedule, billings, closing_month)
    schedule = [r for r in schedule if r["period_month"] >= first_month]
    balances = [r for r in balances if r["period_month"] >= first_month]

    schedule = keep_closed_periods(schedule, _published(context, "revenue_schedule", SCHEDULE_COLUMNS), closed)
    balances = keep_closed_periods(balances, _published(context, "deferred_revenue_balance", BALANCE_COLUMNS), closed)
    context.log.info(
        "revrec.monthly: %s contracts, closing month %s, %s closed months, %s schedule rows, %s balance rows",
        len(contracts),
        closing_month.isoformat(),
        len(closed),
        len(schedule),
        len(balances),
    )
    context.write("revenue_schedule", schedule)
    context.write("deferred_revenue_balance", balances)
