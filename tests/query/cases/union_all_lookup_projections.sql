-- UNION ALL of two blocks that each join the fact with a lookup projection: each branch's model part from a layout
-- answer: layout
select 'asia' as region, x.c_nation as nation, sum(lo_revenue) as revenue
from ssb.lineorder
join (select c_custkey, c_nation from ssb.customer where c_region = 'ASIA') x on lo_custkey = x.c_custkey
group by x.c_nation
union all
select 'europe' as region, y.s_nation as nation, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.supplier on lo_suppkey = s_suppkey
join (select s_suppkey, s_nation from ssb.supplier where s_region = 'EUROPE') y on supplier.s_suppkey = y.s_suppkey
group by y.s_nation
