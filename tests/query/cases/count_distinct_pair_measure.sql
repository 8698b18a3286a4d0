-- COUNT(DISTINCT a, b) from the HLL measure of exactly those columns (written in the other order)
-- answer: layout
-- tolerance: 0.05
select d_year, count(distinct lo_suppkey, lo_partkey) as pairs
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
