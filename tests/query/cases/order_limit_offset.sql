-- ORDER BY an aggregate with LIMIT and OFFSET
-- answer: layout
-- order: exact
select c_nation, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
group by c_nation
order by revenue desc
limit 5 offset 3
