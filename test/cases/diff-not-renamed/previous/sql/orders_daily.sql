select 1 as day
