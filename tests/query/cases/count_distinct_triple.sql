-- COUNT(DISTINCT a, b, c) where a measure counts only (a, b): raw rows answer (the base table index)
-- answer: layout
select d_year, count(distinct lo_suppkey, lo_partkey, lo_custkey) as triples
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
