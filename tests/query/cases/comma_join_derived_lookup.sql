-- a comma join whose lookup column no layout holds: SUPPLIER joined back onto the layout (as INNER)
-- answer: layout
select s_address, d_year, sum(lo_revenue) as revenue, count(*) as n
from ssb.lineorder, ssb.supplier, ssb.dates
where lo_suppkey = s_suppkey and lo_orderdate = d_datekey and d_year = 1995
group by s_address, d_year
