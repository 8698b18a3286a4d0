-- AVG of a column the model sums and counts (REVENUE and REVENUE_ROWS)
-- answer: layout
select c_region, avg(lo_revenue) as avg_revenue
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
group by c_region
