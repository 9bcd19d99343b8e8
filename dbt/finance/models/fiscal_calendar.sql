-- The fiscal calendar, typed, from the controllers' spreadsheet (the seed fiscal_calendar_seed).
select
    cast(fiscal_month as date) as fiscal_month,
    cast(fiscal_year as integer) as fiscal_year,
    cast(fiscal_quarter as varchar) as fiscal_quarter,
    cast(period_number as integer) as period_number,
    cast(close_deadline as date) as close_deadline,
    cast(is_closed as boolean) as is_closed
from {{ ref('fiscal_calendar_seed') }}
