-- Net billings per contract and calendar month: invoices less credit notes, each document
-- converted to EUR at the reference rate in force on its own date.
with documents as (
    select
        i.contract_id,
        i.invoice_date as document_date,
        i.currency,
        cast(i.amount_net as decimal(18, 2)) as invoiced_amount,
        cast(0 as decimal(18, 2)) as credited_amount
    from {{ ref('invoices_curated') }} as i
    union all
    select
        i.contract_id,
        n.issued_date as document_date,
        i.currency,
        cast(0 as decimal(18, 2)) as invoiced_amount,
        cast(n.amount as decimal(18, 2)) as credited_amount
    from {{ source('billing', 'credit_notes_raw') }} as n
    join {{ ref('invoices_curated') }} as i
        on i.invoice_id = n.invoice_id
),
converted as (
    select
        d.contract_id,
        cast({{ dbt.date_trunc('month', 'd.document_date') }} as date) as billing_month,
        d.currency,
        d.invoiced_amount,
        d.credited_amount,
        case
            when d.currency = 'EUR' then d.invoiced_amount - d.credited_amount
            else (d.invoiced_amount - d.credited_amount) / r.rate
        end as net_amount_eur
    from documents as d
    left join {{ ref('fx_rate_validity') }} as r
        on r.quote_currency = d.currency
        and d.document_date >= r.valid_from
        and d.document_date < r.valid_to
)
select
    v.contract_id,
    c.account_id,
    v.billing_month,
    v.currency,
    cast(sum(v.invoiced_amount) as decimal(18, 2)) as invoiced_amount,
    cast(sum(v.credited_amount) as decimal(18, 2)) as credited_amount,
    cast(sum(v.invoiced_amount) - sum(v.credited_amount) as decimal(18, 2)) as net_billed_amount,
    cast(sum(v.net_amount_eur) as decimal(18, 2)) as net_billed_amount_eur
from converted as v
join {{ ref('contracts_curated') }} as c
    on c.contract_id = v.contract_id
group by
    v.contract_id,
    c.account_id,
    v.billing_month,
    v.currency
