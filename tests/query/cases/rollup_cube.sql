-- ROLLUP: subtotals re-merged from one layout's cells
-- answer: layout
select d_year, c_region, sum(lo_revenue) as revenue, count(distinct lo_custkey) as customers, count(*) as n
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
group by rollup(d_year, c_region)
