-- an IN subquery over CUSTOMER alone: the subquery reads the CUSTOMER snapshot, the outer block a layout
-- answer: layout
select d_year, sum(lo_revenue) as revenue
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where lo_custkey in (select c_custkey from ssb.customer where c_region = 'ASIA')
group by d_year
