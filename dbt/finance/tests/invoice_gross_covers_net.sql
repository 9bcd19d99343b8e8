-- An invoice's gross amount is never below its net amount (tax is never negative).
select invoice_id, amount_net, amount_gross
from {{ ref('invoices_curated') }}
where amount_gross < amount_net
