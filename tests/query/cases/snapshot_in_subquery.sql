-- a lookup-only IN subquery under a fact aggregate: the subquery from the snapshot, the outer block from a layout
-- answer: layout
select d_year, count(*) as orders
from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
where d_yearmonth in (select d_yearmonth from ssb.dates where d_monthnuminyear = 3)
group by d_year
