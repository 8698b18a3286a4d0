-- COLLECT_SET (sorted), BOOL_AND, MODE-free aggregates of raw rows
-- answer: layout
select d_year, sort_array(collect_set(lo_discount)) as discounts, bool_and(lo_quantity > 0) as all_positive,
    bool_or(lo_discount = 10) as any_ten
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
group by d_year
