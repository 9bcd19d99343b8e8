select 'a' as order_id
