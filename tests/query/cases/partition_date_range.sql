-- a half-open date range on the partition column inside one segment, grouped by month
-- answer: layout
-- order: exact
select d_yearmonthnum, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where lo_orderdate >= date '1995-03-01' and lo_orderdate < date '1995-06-01'
group by d_yearmonthnum
order by d_yearmonthnum
