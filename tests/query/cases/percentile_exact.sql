-- PERCENTILE and MEDIAN are Spark's exact, interpolating ones (a table index answers): in a group of even size, the mean of the middle two
-- answer: layout
select lo_orderkey, percentile(lo_revenue, 0.5) as median_revenue, median(lo_revenue) as also_median,
    percentile(lo_revenue, 0.25) as q1, count(*) as n
from ssb.lineorder
where lo_orderkey < 200
group by lo_orderkey
