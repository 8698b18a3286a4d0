-- a detail query over lookup columns and measure inputs (the base table index), one day's lines
-- answer: layout
select d_yearmonth, c_nation, s_city, lo_quantity, lo_revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey
left join ssb.supplier on lo_suppkey = s_suppkey
where lo_orderdate = date '1997-07-14'
