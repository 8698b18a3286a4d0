-- a comma join inside a derived table, ranked outside
-- answer: layout
select c_nation, revenue, rank() over (order by revenue desc) as place
from (
  select c_nation, sum(lo_revenue) as revenue
  from ssb.lineorder, ssb.customer, ssb.dates
  where lo_custkey = c_custkey and lo_orderdate = d_datekey and c_region = 'AMERICA' and d_year >= 1996
  group by c_nation
) t
