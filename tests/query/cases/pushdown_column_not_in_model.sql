-- SUM of LO_TAX, which no measure reads and no index holds
-- answer: pushdown
select d_year, sum(lo_tax) as tax
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
