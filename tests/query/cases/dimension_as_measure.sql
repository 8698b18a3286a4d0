-- MIN, MAX and COUNT(DISTINCT) of dimensions, answered from the dimensions of a layout
-- answer: layout
select d_year, min(d_yearmonthnum) as first_month, max(d_yearmonthnum) as last_month
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
