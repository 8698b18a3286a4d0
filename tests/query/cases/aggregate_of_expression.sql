-- aggregates of expressions no measure precomputes: the base table index's raw rows answer
-- answer: layout
select d_year, sum(lo_revenue * 2) as doubled, sum(lo_quantity + lo_discount) as q_plus_d,
    sum(case when lo_discount > 3 then lo_revenue else 0 end) as discounted, max(lo_revenue - lo_supplycost) as margin
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
