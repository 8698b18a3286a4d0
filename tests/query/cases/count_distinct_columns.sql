-- COUNT(DISTINCT a, b) of dimensions from a layout's distinct tuples, also under FILTER and over lookup columns
-- answer: layout
select d_year, count(distinct lo_discount, lo_quantity) as pairs,
    count(distinct lo_discount, lo_quantity) filter (where lo_quantity > 25) as large_pairs,
    count(distinct d_yearmonthnum, lo_discount) as month_discounts
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
