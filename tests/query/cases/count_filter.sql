-- COUNT(*) and COUNT(column) under FILTER: a group where the condition never holds counts 0
-- answer: layout
select d_year, count(*) filter (where lo_discount > 5) as discounted,
    count(lo_quantity) filter (where lo_quantity < 10) as small, count(*) filter (where d_year = 1992) as only_1992,
    sum(lo_quantity) filter (where lo_discount = 0) as undiscounted_quantity, count(*) as all_rows
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
