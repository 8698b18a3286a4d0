-- SSB Q1.1: revenue (the V_REVENUE computed column written out) under year, discount and quantity filters
-- answer: layout
select sum(lo_extendedprice * lo_discount) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where d_year = 1993 and lo_discount between 1 and 3 and lo_quantity < 25
