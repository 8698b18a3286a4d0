-- COUNT of a column NULL on some rows, without COUNT(col) measure: raw rows answer (the base table index)
-- answer: layout
select d_year, count(case when lo_quantity < 10 then lo_supplycost end) as n
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
