-- COUNT(DISTINCT a, b) where b is in no layout (LO_TAX): the source tables answer
-- answer: pushdown
select d_year, count(distinct lo_discount, lo_tax) as pairs
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
