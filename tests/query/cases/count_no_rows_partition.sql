-- COUNT(*) without GROUP BY when the partition filter excludes every segment: one row with 0
-- answer: layout
select count(*) as lines
from ssb.lineorder
where lo_orderdate < date '1990-01-01'
