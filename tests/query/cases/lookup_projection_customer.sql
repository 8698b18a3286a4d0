-- the fact joined directly to a projection of CUSTOMER: COUNT(*), SUM, AVG, MIN and MAX re-aggregated from the model part's partials
-- answer: layout
select x.c_nation, count(*) as lines, sum(lo_revenue) as revenue, avg(lo_revenue) as average,
  min(lo_revenue) as smallest, max(lo_revenue) as largest
from ssb.lineorder
join (select c_custkey, c_nation from ssb.customer where c_region = 'ASIA') x on lo_custkey = x.c_custkey
group by x.c_nation
