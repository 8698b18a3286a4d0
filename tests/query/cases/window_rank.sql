-- rank() over an aggregate, partitioned by year
-- answer: layout
select d_year, c_region, sum(lo_revenue) as revenue,
       rank() over (partition by d_year order by sum(lo_revenue) desc) as rnk
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
group by d_year, c_region
