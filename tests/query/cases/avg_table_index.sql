-- AVG of a column no aggregate layout counts (no COUNT(LO_SUPPLYCOST)): the base table index aggregates
-- answer: layout
select c_region, avg(lo_supplycost) as avg_cost
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
group by c_region
