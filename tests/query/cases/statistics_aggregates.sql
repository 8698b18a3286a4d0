-- STDDEV, VARIANCE, CORR: no measure merges them, the base table index's raw rows answer
-- answer: layout
-- tolerance: 1e-6
select d_year, stddev(lo_quantity) as sd, variance(lo_discount) as var, var_pop(lo_quantity) as var_pop,
    corr(lo_quantity, lo_discount) as r
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
