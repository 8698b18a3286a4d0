-- precise COUNT(DISTINCT) of customers by year and customer region (a bitmap measure)
-- answer: layout
select d_year, c_region, count(distinct lo_custkey) as customers
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
group by d_year, c_region
