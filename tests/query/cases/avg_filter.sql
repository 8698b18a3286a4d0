-- AVG under FILTER from its SUM and COUNT measures: the condition applies to both
-- answer: layout
select d_year, avg(lo_revenue) filter (where c_region = 'ASIA') as asia, avg(lo_revenue) as overall
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
group by d_year
