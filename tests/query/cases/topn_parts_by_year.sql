-- TOP_N grouped and filtered by a dimension of its layout, ordered by position, with an offset
-- answer: layout
-- order: exact
select d_year, lo_partkey, sum(lo_revenue)
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where d_year in (1993, 1997)
group by d_year, lo_partkey
order by 3 desc, 1, 2
limit 20 offset 5
