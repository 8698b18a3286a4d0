-- a date range on the partition column across the segment boundary (1995-01-01), grouped by the date
-- answer: layout
-- order: exact
select lo_orderdate, count(*) as lines, sum(lo_revenue) as revenue
from ssb.lineorder
where lo_orderdate between date '1994-12-28' and date '1995-01-03'
group by lo_orderdate
order by lo_orderdate
