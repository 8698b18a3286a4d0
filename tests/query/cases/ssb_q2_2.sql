-- SSB Q2.2: revenue by year and brand for a brand range and supplier region
-- answer: layout
-- order: exact
select sum(lo_revenue) as lo_revenue, d_year, p_brand
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.part on lo_partkey = p_partkey
left join ssb.supplier on lo_suppkey = s_suppkey
where p_brand between 'MFGR#1414' and 'MFGR#2134' and s_region = 'AMERICA'
group by d_year, p_brand
order by d_year, p_brand
