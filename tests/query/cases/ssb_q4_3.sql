-- SSB Q4.3: profit by year, supplier city and brand for one supplier nation (no PERU supplier at SF 0.01)
-- answer: layout
-- order: exact
-- rows: none
select d_year, s_city, p_brand, sum(lo_revenue) - sum(lo_supplycost) as profit
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.part on lo_partkey = p_partkey
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.customer on lo_custkey = c_custkey
where c_region = 'AMERICA' and s_nation = 'PERU' and (d_year = 1997 or d_year = 1998) and p_category = 'MFGR#12'
group by d_year, s_city, p_brand
order by d_year, s_city, p_brand
