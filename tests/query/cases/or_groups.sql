-- OR of AND-groups across customer and supplier columns
-- answer: layout
select c_region, s_region, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
left join ssb.supplier on lo_suppkey = s_suppkey
left join ssb.dates on lo_orderdate = d_datekey
where (c_region = 'ASIA' and s_region = 'EUROPE') or (c_region = 'EUROPE' and s_region = 'ASIA') or d_year = 1998
group by c_region, s_region
