-- TOP_N: the parts of the largest revenue from the TOP_PARTS measure's cells (no layout holds LO_PARTKEY)
-- answer: layout
-- order: exact
select lo_partkey, sum(lo_revenue) as revenue
from ssb.lineorder
group by lo_partkey
order by revenue desc, lo_partkey
limit 10
