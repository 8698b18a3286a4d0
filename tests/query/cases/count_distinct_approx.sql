-- approx_count_distinct (HLL measures) of suppliers and customers against the exact counts
-- answer: layout
-- tolerance: 0.05
select d_year, s_region, approx_count_distinct(lo_suppkey) as suppliers, approx_count_distinct(lo_custkey) as customers
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.supplier on lo_suppkey = s_suppkey
group by d_year, s_region
