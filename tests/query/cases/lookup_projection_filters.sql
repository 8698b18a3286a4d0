-- FILTER clauses (one on a model column, one on a column of the projection) and an aggregate of an expression through the join
-- answer: layout
select x.d_yearmonth,
  sum(lo_revenue) filter (where lo_discount > 5) as discounted,
  count(*) filter (where x.d_yearmonth like 'Jan%') as january_lines,
  sum(lo_extendedprice * lo_discount) as discount_revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
join (select d_datekey, d_yearmonth from ssb.dates where d_year = 1994) x on lo_orderdate = x.d_datekey
group by x.d_yearmonth
