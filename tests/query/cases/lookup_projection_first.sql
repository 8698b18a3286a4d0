-- the projection first and the fact INNER-joined to it, a model-only filter, HAVING, ORDER BY and LIMIT on the re-aggregated sums
-- answer: layout
-- order: exact
select x.c_nation, sum(lo_revenue) as revenue
from (select c_custkey, c_nation from ssb.customer where c_region = 'ASIA') x
join ssb.lineorder on lo_custkey = x.c_custkey
left join ssb.dates on lo_orderdate = d_datekey
where d_year = 1993
group by x.c_nation
having sum(lo_revenue) > 0
order by revenue desc, x.c_nation
limit 3
