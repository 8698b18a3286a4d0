-- LIKE with a prefix pattern on the brand, grouped by category
-- answer: layout
select p_category, count(*) as lines, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.part on lo_partkey = p_partkey
left join ssb.dates on lo_orderdate = d_datekey
where p_brand like 'MFGR#1%'
group by p_category
