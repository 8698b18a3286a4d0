-- a detail query (no aggregation) answered by the order-lines table index, first 20 lines by key
-- answer: layout
-- order: exact
select lo_orderkey, lo_linenumber, lo_orderdate, lo_custkey, lo_revenue
from ssb.lineorder
where lo_orderdate >= date '1996-06-01' and lo_orderdate < date '1996-06-08' and lo_shipmode = 'AIR'
order by lo_orderkey, lo_linenumber
limit 20
