-- a correlated EXISTS over CUSTOMER reads the outer block's LO_CUSTKEY: it cannot read the source beside a layout, so the statement is pushed down
-- answer: pushdown
select d_year, count(*) as lines
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where exists (select 1 from ssb.customer where c_custkey = lo_custkey and c_region = 'ASIA')
group by d_year
