-- DISTINCT aggregates of the column the query groups by: one value per group
-- answer: layout
select lo_discount, sum(distinct lo_discount) as s, avg(distinct lo_discount) as a,
    count(distinct lo_discount) as c, max(distinct lo_discount) as m
from ssb.lineorder
group by lo_discount
