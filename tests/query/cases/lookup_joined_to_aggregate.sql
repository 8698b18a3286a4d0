-- a lookup joined to a derived aggregate of the fact: the aggregate from a layout, the outer block over DATES from its source table
-- answer: layout
select d_year, sum(t.revenue) as revenue, count(*) as days
from (select lo_orderdate, sum(lo_revenue) as revenue from ssb.lineorder group by lo_orderdate) t
join ssb.dates on t.lo_orderdate = d_datekey
group by d_year
