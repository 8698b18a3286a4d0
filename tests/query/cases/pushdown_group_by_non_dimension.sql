-- GROUP BY a fact column that no index holds (LO_ORDERPRIORITY), though its sums are measures
-- answer: pushdown
select lo_orderpriority, sum(lo_revenue) as revenue
from ssb.lineorder
group by lo_orderpriority
