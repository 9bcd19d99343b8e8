select 'o1' as order_id
