-- COUNT(DISTINCT a, b) of two columns: no measure counts pairs, a table index does
-- answer: layout
select d_year, count(distinct lo_discount, lo_quantity) as pairs
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
