-- SSB variant: Q2.3 with a brand that AMERICA suppliers sell at SF 0.01
-- answer: layout
-- order: exact
select sum(lo_revenue) as lo_revenue, d_year, p_brand
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.part on lo_partkey = p_partkey
left join ssb.supplier on lo_suppkey = s_suppkey
where p_brand = 'MFGR#1418' and s_region = 'AMERICA'
group by d_year, p_brand
order by d_year, p_brand
