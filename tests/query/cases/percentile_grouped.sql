-- PERCENTILE per ship mode over a table index
-- answer: layout
select lo_shipmode, percentile(lo_revenue, 0.5) as median_revenue, percentile(lo_revenue, 0.9) as p90
from ssb.lineorder
group by lo_shipmode
