-- aggregates of the projection's columns through the join: COUNT, SUM and AVG weighted by the rows each model-part row stands for, MIN/MAX and DISTINCT as written
-- answer: layout
select d_year, count(x.c_nation) as nations, sum(x.c_custkey) as key_sum, avg(x.c_custkey) as key_avg,
  max(x.c_nation) as last_nation, min(x.c_custkey + 1) as first_key, count(distinct x.c_nation) as distinct_nations,
  sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join (select c_custkey, c_nation from ssb.customer where c_region = 'ASIA') x on lo_custkey = x.c_custkey
group by d_year
