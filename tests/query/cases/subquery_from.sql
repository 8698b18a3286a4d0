-- a derived table that aggregates, filtered and ordered outside
-- answer: layout
-- order: exact
select t.c_nation, t.revenue
from (
  select c_nation, sum(lo_revenue) as revenue
  from ssb.lineorder
  left join ssb.customer on lo_custkey = c_custkey
  left join ssb.dates on lo_orderdate = d_datekey
  where c_region = 'AMERICA'
  group by c_nation
) t
where t.revenue > 10000000000
order by t.c_nation
