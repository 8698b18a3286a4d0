-- PERCENTILE_APPROX from a layout's KLL sketches merged per year (typed as the column, as Spark's)
-- answer: layout
-- tolerance: 0.05
select d_year, percentile_approx(lo_revenue, 0.5) as median_revenue, percentile_approx(lo_revenue, 0.9) as p90
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
