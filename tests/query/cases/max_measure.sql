-- MAX of a fact column (a MAX measure, also a dimension) with MIN of the partition date
-- answer: layout
select c_region, max(lo_discount) as max_discount, min(lo_orderdate) as first_order, max(lo_orderdate) as last_order
from ssb.lineorder
left join ssb.customer on lo_custkey = c_custkey
group by c_region
