-- an aggregate of an expression over a column no layout holds (LO_TAX)
-- answer: pushdown
select d_year, sum(lo_revenue + lo_tax) as revenue_and_tax
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
