-- One row per non-void invoice, amounts summed from its lines.
select
    i.invoice_id,
    i.account_id,
    i.contract_id,
    i.invoice_date,
    i.due_date,
    i.currency,
    i.status,
    cast(count(l.invoice_line_id) as integer) as line_count,
    cast(coalesce(sum(l.amount), 0) as decimal(18, 2)) as amount_net,
    cast(coalesce(sum(l.tax_amount), 0) as decimal(18, 2)) as amount_tax,
    cast(coalesce(sum(l.amount), 0) + coalesce(sum(l.tax_amount), 0) as decimal(18, 2)) as amount_gross
from {{ source('billing', 'invoices_raw') }} as i
left join {{ source('billing', 'invoice_lines_raw') }} as l
    on l.invoice_id = i.invoice_id
where i.status <> 'void'
group by
    i.invoice_id,
    i.account_id,
    i.contract_id,
    i.invoice_date,
    i.due_date,
    i.currency,
    i.status
