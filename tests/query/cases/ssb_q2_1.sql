-- SSB Q2.1: revenue by year and brand for one category and supplier region
-- answer: layout
-- order: exact
select sum(lo_revenue) as lo_revenue, d_year, p_brand
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.part on lo_partkey = p_partkey
left join ssb.supplier on lo_suppkey = s_suppkey
where p_category = 'MFGR#12' and s_region = 'AMERICA'
group by d_year, p_brand
order by d_year, p_brand
