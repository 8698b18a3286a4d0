-- NOT IN and <> on lookup columns
-- answer: layout
select c_region, s_region, count(*) as lines
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.dates on lo_orderdate = d_datekey
where c_region not in ('ASIA', 'AMERICA') and s_region <> 'AFRICA'
group by c_region, s_region
