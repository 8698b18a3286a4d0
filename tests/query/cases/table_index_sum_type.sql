-- SUM and AVG over a table index's raw rows (no aggregate layout has LO_SHIPMODE)
-- answer: layout
select lo_shipmode, sum(lo_revenue) as revenue, sum(lo_revenue * 2) as doubled, avg(lo_revenue) as average,
    count(lo_revenue) as n, sum(lo_revenue) filter (where lo_orderkey > 100) as later
from ssb.lineorder
where lo_orderkey < 2000
group by lo_shipmode
