-- HAVING on an aggregate that is not selected
-- answer: layout
select c_nation, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
group by c_nation
having count(*) > 2500
