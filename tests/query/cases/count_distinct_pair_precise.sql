-- COUNT(DISTINCT a, b) from the precise (bitmap) measure of the pair: at the layout's grain and rolled up
-- answer: layout
select d_year, count(distinct lo_custkey, lo_partkey) as pairs,
    count(distinct lo_partkey, lo_custkey) filter (where c_region = 'ASIA') as asia_pairs
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
group by d_year
