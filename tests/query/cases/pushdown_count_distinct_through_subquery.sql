-- COUNT(DISTINCT) of a column no layout holds, through a join with a lookup projection: the model part would group by it, so no layout answers
-- answer: pushdown
select x.c_nation, count(distinct lo_tax) as taxes
from ssb.lineorder
join (select c_custkey, c_nation from ssb.customer where c_region = 'ASIA') x on lo_custkey = x.c_custkey
group by x.c_nation
