-- lookups joined in another order than the model's, with the ON sides swapped
-- answer: layout
-- order: exact
select s_region, c_region, d_year, sum(lo_revenue) as revenue, count(*) as lines
from ssb.lineorder
left join ssb.customer on c_custkey = lo_custkey
left join ssb.supplier on s_suppkey = lo_suppkey
left join ssb.dates on d_datekey = lo_orderdate
where d_year = 1996
group by s_region, c_region, d_year
order by s_region, c_region
