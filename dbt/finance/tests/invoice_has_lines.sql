{{ config(severity='warn') }}
-- Every invoice has at least one line; an invoice without lines is published, but degraded.
select invoice_id
from {{ ref('invoices_curated') }}
where line_count = 0
