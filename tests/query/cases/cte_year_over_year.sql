-- a CTE read twice: each region's revenue against the year before
-- answer: layout
-- order: exact
with yearly as (
  select d_year, c_region, sum(lo_revenue) as revenue
  from ssb.lineorder
  left join ssb.dates on lo_orderdate = d_datekey
  left join ssb.customer on lo_custkey = c_custkey
  group by d_year, c_region
)
select cur.d_year, cur.c_region, cur.revenue, cur.revenue - prev.revenue as growth
from yearly cur
join yearly prev on prev.d_year = cur.d_year - 1 and prev.c_region = cur.c_region
order by cur.d_year, cur.c_region
