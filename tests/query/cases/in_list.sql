-- an IN list on a part column
-- answer: layout
select p_category, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.part on lo_partkey = p_partkey
left join ssb.dates on lo_orderdate = d_datekey
where p_category in ('MFGR#12', 'MFGR#23', 'MFGR#35') and d_year in (1992, 1998)
group by p_category
