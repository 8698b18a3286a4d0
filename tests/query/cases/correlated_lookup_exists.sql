-- a correlated EXISTS over CUSTOMER on one key equality is a semi-join: LO_CUSTKEY IN (the keys CUSTOMER's snapshot gives)
-- answer: layout
select d_year, count(*) as lines
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where exists (select 1 from ssb.customer where c_custkey = lo_custkey and c_region = 'ASIA')
group by d_year
