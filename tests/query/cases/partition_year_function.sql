-- year() of the partition column (a dimension) in the filter, on the fact table alone
-- answer: layout
select lo_discount, sum(lo_revenue) as revenue, count(*) as lines
from ssb.lineorder
where year(lo_orderdate) = 1994
group by lo_discount
