select 1 as order_id, current_timestamp as updated_at
