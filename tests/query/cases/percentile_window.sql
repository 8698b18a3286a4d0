-- PERCENTILE as a window function over a table index's rows
-- answer: layout
select lo_orderkey, lo_linenumber, percentile(lo_revenue, 0.5) over (partition by lo_orderkey) as order_median
from ssb.lineorder
where lo_orderkey < 300
