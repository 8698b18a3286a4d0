-- SUM(DISTINCT) and AVG(DISTINCT) under FILTER
-- answer: layout
select d_year, sum(distinct lo_discount) filter (where lo_quantity > 20) as s,
    avg(distinct lo_quantity) filter (where lo_discount < 3) as a
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
