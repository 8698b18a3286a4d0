-- PERCENTILE_APPROX / APPROX_PERCENTILE: approximate quantiles close to the exact discrete ones
-- answer: layout
-- tolerance: 0.05
select lo_shipmode, percentile_approx(lo_revenue, 0.5) as median_revenue, approx_percentile(lo_revenue, 0.9) as p90
from ssb.lineorder
group by lo_shipmode
