-- SSB Q2.3: revenue by year and brand for one brand (no AMERICA supplier sells it at SF 0.01)
-- answer: layout
-- order: exact
-- rows: none
select sum(lo_revenue) as lo_revenue, d_year, p_brand
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.part on lo_partkey = p_partkey
left join ssb.supplier on lo_suppkey = s_suppkey
where p_brand = 'MFGR#1414' and s_region = 'AMERICA'
group by d_year, p_brand
order by d_year, p_brand
