"""Monthly revenue recognition: the producer of contract ``revrec.monthly``."""

from __future__ import annotations

from typing import Any


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
    """
    raise NotImplementedError(
        "revrec_jobs.monthly.compute: the runtime interface for python producers is not defined yet"
    )
