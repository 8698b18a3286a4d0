-- precise COUNT(DISTINCT) rolled up over years and both segments (bitmaps unioned, not counts added)
-- answer: layout
select s_region, count(distinct lo_custkey) as customers, count(*) as lines
from ssb.lineorder
left join ssb.supplier on lo_suppkey = s_suppkey
group by s_region
