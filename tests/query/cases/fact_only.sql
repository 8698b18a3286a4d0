-- the fact table alone, grouped by fact dimensions, with a measure on the computed column
-- answer: layout
select lo_discount, lo_quantity, sum(lo_extendedprice * lo_discount) as v_revenue, count(*) as lines
from ssb.lineorder
where lo_quantity <= 3
group by lo_discount, lo_quantity
