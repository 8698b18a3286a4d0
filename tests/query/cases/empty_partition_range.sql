-- a partition filter that excludes every segment: an empty grouped result, still from layouts
-- answer: layout
-- rows: none
select d_year, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where lo_orderdate >= date '2050-01-01'
group by d_year
