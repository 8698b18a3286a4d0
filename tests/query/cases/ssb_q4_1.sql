-- SSB Q4.1: profit (a difference of two sums) by year and customer nation for two manufacturers
-- answer: layout
-- order: exact
select d_year, c_nation, sum(lo_revenue) - sum(lo_supplycost) as profit
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.part on lo_partkey = p_partkey
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.customer on lo_custkey = c_custkey
where c_region = 'AMERICA' and s_region = 'AMERICA' and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2')
group by d_year, c_nation
order by d_year, c_nation
