-- Open receivables per invoice, aged by days past due at the run date.
with paid as (
    select
        invoice_id,
        sum(amount) as paid_amount
    from billing.payments_raw
    group by invoice_id
)
select
    i.invoice_id,
    i.account_id,
    i.currency,
    i.due_date,
    i.amount_gross,
    cast(coalesce(p.paid_amount, 0) as decimal(18, 2)) as paid_amount,
    cast(i.amount_gross - coalesce(p.paid_amount, 0) as decimal(18, 2)) as open_amount,
    cast(greatest(date_diff('day', i.due_date, current_date), 0) as integer) as days_past_due,
    case
        when current_date <= i.due_date then 'current'
        when date_diff('day', i.due_date, current_date) <= 30 then 'days_1_30'
        when date_diff('day', i.due_date, current_date) <= 60 then 'days_31_60'
        when date_diff('day', i.due_date, current_date) <= 90 then 'days_61_90'
        else 'days_over_90'
    end as aging_bucket
from finance.invoices_curated as i
left join paid as p
    on p.invoice_id = i.invoice_id
where i.amount_gross - coalesce(p.paid_amount, 0) > 0
