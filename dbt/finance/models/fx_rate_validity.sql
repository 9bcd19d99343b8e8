{{ config(materialized='ephemeral') }}
-- Each EUR reference rate with the dates it is in force: from its publication until the next one.
select
    quote_currency,
    rate,
    rate_date as valid_from,
    lead(rate_date, 1, cast('9999-12-31' as date)) over (
        partition by quote_currency order by rate_date
    ) as valid_to
from {{ source('fx', 'rates_daily') }}
where base_currency = 'EUR'
