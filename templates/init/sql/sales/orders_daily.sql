-- Orders per day and currency. Upstream datasets are tables named <domain>.<dataset name>.
select
    cast(ordered_at as date) as order_date,
    currency,
    cast(count(*) as integer) as order_count,
    cast(sum(amount) as decimal(18, 2)) as amount
from sales.orders_raw
group by cast(ordered_at as date), currency
