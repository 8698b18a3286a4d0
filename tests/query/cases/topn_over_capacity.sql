-- TOP_N asked for more rows (60) than TOP_PARTS keeps (topn(50)): raw rows answer (the base table index)
-- answer: layout
-- order: exact
select lo_partkey, sum(lo_revenue) as revenue
from ssb.lineorder
group by lo_partkey
order by revenue desc, lo_partkey
limit 60
