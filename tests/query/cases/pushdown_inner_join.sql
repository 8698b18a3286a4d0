-- an INNER JOIN where the model has a LEFT join: the join types differ
-- answer: pushdown
select d_year, sum(lo_revenue) as revenue
from ssb.lineorder
inner join ssb.dates on lo_orderdate = d_datekey
group by d_year
