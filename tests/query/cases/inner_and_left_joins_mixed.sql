-- one INNER and one LEFT join in one block over a LEFT model
-- answer: layout
select s_region, p_mfgr, sum(lo_revenue) as revenue
from ssb.lineorder
join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.part on lo_partkey = p_partkey
where s_region in ('ASIA', 'EUROPE')
group by s_region, p_mfgr
