-- the fact (with its DATES join) joined to a projection of DATES filtered inside: the model part is answered from a layout grouped by the join key, the projection read apart, the sums re-aggregated by a column of the projection
-- answer: layout
select x.d_yearmonth, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
join (select d_datekey, d_yearmonth from ssb.dates where d_year = 1994) x on lo_orderdate = x.d_datekey
group by x.d_yearmonth
