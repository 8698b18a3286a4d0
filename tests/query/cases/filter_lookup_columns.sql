-- equality filters on customer and supplier columns that are not grouped by
-- answer: layout
select d_year, sum(lo_revenue) as revenue, count(*) as lines
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
left join ssb.supplier on lo_suppkey = s_suppkey
where c_nation = 'CHINA' and s_region = 'MIDDLE EAST'
group by d_year
