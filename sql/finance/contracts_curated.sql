-- Contracts with their account, service months and the contract value in EUR at the
-- reference rate in force on the start date (the latest rate published on or before it).
-- Portable SQL: runs on the embedded DuckDB warehouse and on PostgreSQL alike.
with fx_validity as (
    select
        quote_currency,
        rate,
        rate_date as valid_from,
        lead(rate_date, 1, date '9999-12-31') over (
            partition by quote_currency order by rate_date
        ) as valid_to
    from fx.rates_daily
    where base_currency = 'EUR'
)
select
    c.contract_id,
    c.account_id,
    a.account_name,
    a.segment,
    c.status as contract_status,
    c.start_date,
    c.end_date,
    cast(
        (extract(year from c.end_date) - extract(year from c.start_date)) * 12
        + extract(month from c.end_date) - extract(month from c.start_date) + 1
        as integer
    ) as service_months,
    c.currency,
    cast(c.total_contract_value as decimal(18, 2)) as total_contract_value,
    cast(
        case
            when c.currency = 'EUR' then c.total_contract_value
            else c.total_contract_value / r.rate
        end
        as decimal(18, 2)
    ) as total_contract_value_eur,
    c.billing_frequency
from crm.contracts_raw as c
left join crm.accounts_raw as a
    on a.account_id = c.account_id
left join fx_validity as r
    on r.quote_currency = c.currency
    and c.start_date >= r.valid_from
    and c.start_date < r.valid_to
