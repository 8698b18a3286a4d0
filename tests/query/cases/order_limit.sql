-- ORDER BY dimensions with LIMIT: the first ten groups
-- answer: layout
-- order: exact
select d_year, s_nation, p_mfgr, count(*) as lines
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.part on lo_partkey = p_partkey
group by d_year, s_nation, p_mfgr
order by d_year desc, s_nation, p_mfgr
limit 10
