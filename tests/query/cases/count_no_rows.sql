-- aggregates without GROUP BY over no rows: one row, COUNT 0 and SUM NULL
-- answer: layout
select count(*) as lines, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where d_year = 2050
