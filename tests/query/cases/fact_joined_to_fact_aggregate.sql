-- the fact joined with an aggregate of itself: both blocks are answered from layouts (the inner one a table index grouped by LO_CUSTKEY)
-- answer: layout
-- order: exact
select t.total, count(*) as lines, sum(lo_revenue) as revenue
from ssb.lineorder
join (select lo_custkey as k, sum(lo_revenue) as total from ssb.lineorder group by lo_custkey) t on lo_custkey = t.k
group by t.total
order by lines desc, t.total
limit 5
