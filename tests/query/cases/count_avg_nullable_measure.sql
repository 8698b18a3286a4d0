-- COUNT and AVG of a column that is NULL on some rows, from its COUNT(col) and SUM measures
-- answer: layout
select d_year, count(case when lo_discount > 5 then lo_revenue end) as n,
    avg(case when lo_discount > 5 then lo_revenue end) as a,
    sum(case when lo_discount > 5 then lo_revenue end) as s
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
