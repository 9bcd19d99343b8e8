-- One row per page and UTC day, for the run's partition only: {partition_start} and
-- {partition_end} are the day's bounds [start, end), filled in by the runtime.
select
    cast(viewed_at as date) as view_date,
    page,
    count(*) as views,
    count(distinct visitor_id) as visitors
from web.page_views_raw
where viewed_at >= {partition_start} and viewed_at < {partition_end}
group by cast(viewed_at as date), page
