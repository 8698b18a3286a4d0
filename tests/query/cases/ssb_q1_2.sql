-- SSB Q1.2: revenue in one month (a hierarchy level below the year) under discount and quantity ranges
-- answer: layout
select sum(lo_extendedprice * lo_discount) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where d_yearmonthnum = 199401 and lo_discount between 4 and 6 and lo_quantity between 26 and 35
