select 1 as order_id, 1 as amount
