-- FILTER on a column no layout holds: the source tables answer
-- answer: pushdown
select d_year, sum(lo_revenue) filter (where lo_tax > 3) as taxed
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
