-- an INNER JOIN where the model has a LEFT join: every fact row has its DATES row in the scanned segments
-- answer: layout
select d_year, sum(lo_revenue) as revenue
from ssb.lineorder
inner join ssb.dates on lo_orderdate = d_datekey
group by d_year
