-- the model's tables on the optional side of a LEFT join with a projection: a missing fact row counts once on raw rows, not from partials
-- answer: pushdown
select x.c_nation, count(*) as lines, sum(lo_revenue) as revenue
from (select c_custkey, c_nation from ssb.customer where c_region = 'ASIA') x
left join ssb.lineorder on lo_custkey = x.c_custkey
group by x.c_nation
