-- a correlated EXISTS reading the outer block by a comparison, not an equality, cannot read the source beside a layout: the statement is pushed down
-- answer: pushdown
select d_year, count(*) as lines
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where exists (select 1 from ssb.customer where c_custkey < lo_custkey and c_region = 'ASIA')
group by d_year
