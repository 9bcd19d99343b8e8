-- Contracts with their account, service months and the contract value in EUR at the
-- reference rate in force on the start date (the latest rate published on or before it).
select
    c.contract_id,
    c.account_id,
    a.account_name,
    a.segment,
    c.status as contract_status,
    c.start_date,
    c.end_date,
    cast({{ dbt.datediff('c.start_date', 'c.end_date', 'month') }} + 1 as integer) as service_months,
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
from {{ source('crm', 'contracts_raw') }} as c
left join {{ source('crm', 'accounts_raw') }} as a
    on a.account_id = c.account_id
left join {{ ref('fx_rate_validity') }} as r
    on r.quote_currency = c.currency
    and c.start_date >= r.valid_from
    and c.start_date < r.valid_to
