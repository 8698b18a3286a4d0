-- UNION ALL of two aggregates over different lookups
-- answer: layout
select 'customer' as side, c_region as region, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
group by c_region
union all
select 'supplier' as side, s_region as region, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.supplier on lo_suppkey = s_suppkey
group by s_region
