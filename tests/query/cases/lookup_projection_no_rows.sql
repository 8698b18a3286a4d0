-- a global COUNT(*) and SUM through a join with a projection that has no row: 0 and NULL, as on the raw rows
-- answer: layout
select count(*) as lines, sum(lo_revenue) as revenue
from ssb.lineorder
join (select d_datekey from ssb.dates where d_year = 1800) x on lo_orderdate = x.d_datekey
