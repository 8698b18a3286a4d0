-- a JOIN clause and comma joins in one block, an extra equality between the JOINed tables kept as a filter
-- answer: layout
select c_nation, d_year, sum(lo_revenue) as revenue
from ssb.lineorder join ssb.dates on lo_orderdate = d_datekey, ssb.customer
where lo_custkey = c_custkey and c_region = 'ASIA' and lo_orderdate = d_datekey
group by c_nation, d_year
