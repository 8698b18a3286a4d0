-- PERCENTILE and MEDIAN under FILTER over a table index: the DOUBLE cast goes around the filtered call
-- answer: layout
select lo_shipmode, percentile(lo_revenue, 0.5) filter (where lo_orderkey > 1000) as p,
    median(lo_revenue) filter (where lo_linenumber = 1) as m
from ssb.lineorder
group by lo_shipmode
