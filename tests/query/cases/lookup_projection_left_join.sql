-- a LEFT join to the projection (its columns NULL where it has no row) and a filter on a model lookup, which filters the model part
-- answer: layout
select d_year, x.c_nation, sum(lo_revenue) as revenue, count(*) as lines
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join (select c_custkey, c_nation from ssb.customer where c_region = 'ASIA') x on lo_custkey = x.c_custkey
where d_year >= 1995
group by d_year, x.c_nation
