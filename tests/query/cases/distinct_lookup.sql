-- SELECT DISTINCT of lookup columns over the fact table (a GROUP BY in disguise)
-- answer: layout
select distinct c_region, s_region
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
left join ssb.supplier on lo_suppkey = s_suppkey
