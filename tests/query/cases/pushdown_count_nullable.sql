-- COUNT of a column that is NULL on some rows and has no COUNT(col) measure: COUNT(*) is no answer
-- answer: pushdown
select d_year, count(case when lo_quantity < 10 then lo_supplycost end) as n
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
