-- MIN/MAX/COUNT(DISTINCT) of dimensions, and a lookup column's MIN/MAX
-- answer: layout
select d_year, min(distinct lo_quantity) as min_q, max(distinct lo_discount) as max_d,
    count(distinct lo_discount) as discounts, min(d_yearmonthnum) as first_month, max(distinct d_yearmonthnum) as last_month
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
