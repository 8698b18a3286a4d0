-- a window SUM over SUM: each region's running revenue over the years, and its share of the year
-- answer: layout
-- types: loose
select d_year, s_region, sum(lo_revenue) as revenue,
       sum(sum(lo_revenue)) over (partition by s_region order by d_year) as running,
       sum(lo_revenue) * 1.0 / sum(sum(lo_revenue)) over (partition by d_year) as share
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.supplier on lo_suppkey = s_suppkey
group by d_year, s_region
