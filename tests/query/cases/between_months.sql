-- BETWEEN on a month number, grouped by it
-- answer: layout
-- order: exact
select d_yearmonthnum, sum(lo_extendedprice * lo_discount) as revenue, count(*) as lines
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where d_yearmonthnum between 199311 and 199402
group by d_yearmonthnum
order by d_yearmonthnum
