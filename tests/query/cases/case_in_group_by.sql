-- a CASE over a dimension as a grouping key
-- answer: layout
select case when d_year < 1995 then 'early' when d_year < 1997 then 'middle' else 'late' end as period,
       c_region, sum(lo_revenue) as revenue, count(*) as lines
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
group by case when d_year < 1995 then 'early' when d_year < 1997 then 'middle' else 'late' end, c_region
