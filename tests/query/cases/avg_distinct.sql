-- AVG(DISTINCT) of a dimension next to the plain AVG of it: the distinct values count once each
-- answer: layout
select d_year, avg(distinct lo_quantity) as distinct_avg, avg(lo_quantity) as avg_quantity
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
