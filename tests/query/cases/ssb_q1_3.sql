-- SSB Q1.3: revenue in one week of one year under discount and quantity ranges
-- answer: layout
select sum(lo_extendedprice * lo_discount) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where d_weeknuminyear = 6 and d_year = 1994 and lo_discount between 5 and 7 and lo_quantity between 26 and 35
