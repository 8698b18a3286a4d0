-- an aggregate of an aggregate in a window: the share of each year in the total revenue
-- answer: layout
-- types: loose
select d_year, sum(lo_revenue) as revenue, sum(sum(lo_revenue)) over () as total,
    sum(lo_revenue) / sum(sum(lo_revenue)) over () as share, count(*) over () as years
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
