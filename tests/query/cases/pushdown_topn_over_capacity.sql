-- TOP_N asked for more rows (60) than the TOP_PARTS measure keeps (topn(50)): the source tables answer
-- answer: pushdown
-- order: exact
select lo_partkey, sum(lo_revenue) as revenue
from ssb.lineorder
group by lo_partkey
order by revenue desc, lo_partkey
limit 60
