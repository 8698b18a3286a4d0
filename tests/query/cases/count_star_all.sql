-- COUNT(*) and sums over the whole fact table: every segment rolled up into one row
-- answer: layout
select count(*) as lines, sum(lo_revenue) as revenue, sum(lo_quantity) as quantity, sum(lo_extendedprice) as price
from ssb.lineorder
