-- an equality between two lookups' dimensions in a comma join is no join of the model: a filter on a layout holding both
-- answer: layout
select d_year, sum(lo_revenue) as revenue
from ssb.lineorder, ssb.customer, ssb.supplier, ssb.dates
where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_orderdate = d_datekey and c_nation = s_nation
group by d_year
