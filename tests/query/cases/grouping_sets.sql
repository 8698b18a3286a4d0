-- GROUPING SETS and CUBE with a DISTINCT aggregate
-- answer: layout
select d_year, lo_discount, sum(distinct lo_quantity) as q, count(*) as n
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by cube(d_year, lo_discount)
