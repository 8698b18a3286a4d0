-- the join repeated in each OR branch (TPC-H Q19's shape) is taken out of the OR
-- answer: layout
select d_year, sum(lo_revenue) as revenue
from ssb.lineorder, ssb.dates, ssb.customer
where (lo_orderdate = d_datekey and lo_custkey = c_custkey and c_region = 'ASIA' and d_year < 1994)
    or (lo_orderdate = d_datekey and lo_custkey = c_custkey and c_region = 'EUROPE' and d_year >= 1996)
group by d_year
