-- SUM(DISTINCT) of dimensions per year: the sum over the distinct values a layout holds, not over its rows
-- answer: layout
select d_year, sum(distinct lo_discount) as discounts, sum(distinct lo_quantity) as quantities
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
