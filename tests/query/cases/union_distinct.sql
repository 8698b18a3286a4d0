-- UNION (distinct) of two aggregate blocks, each answered from a layout
-- answer: layout
select c_region as region, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
group by c_region
union
select s_region as region, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.supplier on lo_suppkey = s_suppkey
group by s_region
