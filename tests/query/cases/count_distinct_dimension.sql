-- COUNT(DISTINCT) of a lookup dimension per year
-- answer: layout
select d_year, count(distinct c_nation) as nations, count(distinct c_city) as cities
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
where c_region = 'ASIA'
group by d_year
