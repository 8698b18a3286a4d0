-- two equalities between the fact table and one lookup are no join of the model (its key is one column)
-- answer: pushdown
select d_year, count(*) as lines
from ssb.lineorder, ssb.supplier, ssb.dates
where lo_suppkey = s_suppkey and lo_partkey = s_suppkey and lo_orderdate = d_datekey
group by d_year
