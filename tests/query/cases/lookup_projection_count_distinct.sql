-- COUNT(DISTINCT) of a dimension through the join: the model part groups by it
-- answer: layout
select x.d_yearmonth, count(distinct d_weeknuminyear) as weeks, count(distinct lo_discount) as discounts
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
join (select d_datekey, d_yearmonth from ssb.dates where d_year = 1994) x on lo_orderdate = x.d_datekey
group by x.d_yearmonth
