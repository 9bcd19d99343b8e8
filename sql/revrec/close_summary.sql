-- Month-close pack: recognized revenue and closing deferred revenue per month and currency,
-- for every month that has a closing balance.
with recognized as (
    select
        period_month,
        currency,
        count(distinct contract_id) as contract_count,
        sum(recognized_amount) as recognized_amount,
        sum(recognized_amount_eur) as recognized_amount_eur
    from revrec.revenue_schedule
    group by period_month, currency
),
deferred as (
    select
        period_month,
        currency,
        sum(deferred_revenue_amount) as deferred_revenue_amount,
        sum(deferred_revenue_amount_eur) as deferred_revenue_amount_eur
    from revrec.deferred_revenue_balance
    group by period_month, currency
)
select
    d.period_month,
    d.currency,
    cast(coalesce(r.contract_count, 0) as integer) as contract_count,
    cast(coalesce(r.recognized_amount, 0) as decimal(18, 2)) as recognized_amount,
    cast(coalesce(r.recognized_amount_eur, 0) as decimal(18, 2)) as recognized_amount_eur,
    cast(d.deferred_revenue_amount as decimal(18, 2)) as deferred_revenue_amount,
    cast(d.deferred_revenue_amount_eur as decimal(18, 2)) as deferred_revenue_amount_eur
from deferred as d
left join recognized as r
    on r.period_month = d.period_month
    and r.currency = d.currency
