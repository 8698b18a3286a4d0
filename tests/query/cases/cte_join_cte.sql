-- a CTE aggregate joined with another CTE aggregate (the second CTE can see the first but does not read it)
-- answer: layout
-- order: exact
with revenue as (
  select d_year, sum(lo_revenue) as total
  from ssb.lineorder
  left join ssb.dates on lo_orderdate = d_datekey
  group by d_year
), discounted as (
  select d_year, count(*) as lines
  from ssb.lineorder
  left join ssb.dates on lo_orderdate = d_datekey
  where lo_discount > 5
  group by d_year
)
select revenue.d_year, revenue.total, discounted.lines
from revenue
join discounted on revenue.d_year = discounted.d_year
order by revenue.d_year
