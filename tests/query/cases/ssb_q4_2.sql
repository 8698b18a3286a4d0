-- SSB Q4.2: profit by year, supplier nation and category for two years and two manufacturers
-- answer: layout
-- order: exact
select d_year, s_nation, p_category, sum(lo_revenue) - sum(lo_supplycost) as profit
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.part on lo_partkey = p_partkey
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.customer on lo_custkey = c_custkey
where c_region = 'AMERICA' and s_region = 'AMERICA' and (d_year = 1997 or d_year = 1998)
  and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2')
group by d_year, s_nation, p_category
order by d_year, s_nation, p_category
