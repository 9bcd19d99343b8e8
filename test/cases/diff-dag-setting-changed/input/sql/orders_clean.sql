select 2 as order_id
