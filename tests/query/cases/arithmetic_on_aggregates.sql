-- arithmetic on aggregates: a difference of sums and a sum divided by a count
-- answer: layout
select d_year, sum(lo_revenue) - sum(lo_supplycost) as profit, sum(lo_revenue) / count(*) as per_line
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
