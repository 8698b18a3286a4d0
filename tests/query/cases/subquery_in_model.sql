-- an IN subquery whose inner query is itself answered from the model (the years of big discounts)
-- answer: layout
select d_year, c_region, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
where d_year in (
  select d_year
  from ssb.lineorder
  left join ssb.dates on lo_orderdate = d_datekey
  where lo_discount = 10
  group by d_year
  having sum(lo_extendedprice * lo_discount) > 30000000000
)
group by d_year, c_region
